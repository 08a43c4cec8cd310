"""JavaScript the evaluator runs inside pages: determinism, settling, screenshots, counters.

Kept apart from :mod:`evaluator.page_session`, which sends these scripts to the page and reads
what they return.
"""

INIT_SCRIPT = r"""
(() => {
  const seed = %(seed)d >>> 0;
  function mulberry32(a) {
    return function () {
      a |= 0; a = (a + 0x6D2B79F5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const rand = mulberry32(seed);
  Math.random = rand;
  const bytesRand = mulberry32(seed ^ 0x9E3779B9);
  if (window.crypto && crypto.getRandomValues) {
    const fill = function (arr) {
      const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(bytesRand() * 256);
      return arr;
    };
    try { Object.defineProperty(Crypto.prototype, 'getRandomValues', {value: fill}); } catch (e) {}
    try {
      Object.defineProperty(Crypto.prototype, 'randomUUID', {value: function () {
        const b = fill(new Uint8Array(16));
        b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
        const h = Array.from(b, x => x.toString(16).padStart(2, '0')).join('');
        return `${h.slice(0,8)}-${h.slice(8,12)}-${h.slice(12,16)}-${h.slice(16,20)}-${h.slice(20)}`;
      }});
    } catch (e) {}
  }
  // Native timers, kept before the fake clock replaces them: settle() measures real quiet time.
  window.__iwrNative = {
    raf: window.requestAnimationFrame.bind(window),
    setTimeout: window.setTimeout.bind(window),
    clearTimeout: window.clearTimeout.bind(window),
    now: performance.now.bind(performance),
  };
  const counts = window.__iwrCounts = {alert: 0, confirm: 0, prompt: 0, open: 0, print: 0};
  window.alert = function () { counts.alert++; };
  window.confirm = function () { counts.confirm++; return false; };
  window.prompt = function () { counts.prompt++; return null; };
  window.print = function () { counts.print++; };
  window.open = function () { counts.open++; return null; };
  // Mutation bookkeeping for settle(): time of the last DOM change, by the native clock.
  window.__iwrLastMutation = 0;
  const watch = () => {
    new MutationObserver(() => { window.__iwrLastMutation = window.__iwrNative.now(); })
      .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  };
  watch();
})();
"""

SETTLE_SCRIPT = r"""
async ({frames, quietMs, maxMs, minMs}) => {
  const n = window.__iwrNative;
  if (!n) return {frames: 0, quiet: false, waited: 0};
  const start = n.now();
  const frame = () => new Promise(resolve => {
    const t = n.setTimeout(resolve, 100);   // hidden pages get no frames: do not wait forever
    n.raf(() => { n.clearTimeout(t); resolve(); });
  });
  for (let i = 0; i < frames; i++) await frame();
  const sleep = ms => new Promise(resolve => n.setTimeout(resolve, ms));
  const done = (quiet, now) => ({frames, quiet, waited: Math.round(now - start)});
  while (true) {
    const now = n.now(), elapsed = now - start;
    const since = now - (window.__iwrLastMutation || 0);
    if (since >= quietMs && elapsed >= minMs) return done(true, now);
    if (elapsed >= maxMs) return done(false, now);
    await sleep(Math.min(Math.max(quietMs - since, minMs - elapsed), maxMs - elapsed) + 1);
  }
}
"""

# Playwright's own screenshot preparation (page.screenshot with animations="disabled" and
# caret="hide"), run in one call per frame: the caret is made transparent, finite animations
# are finished and infinite ones cancelled until SCREENSHOT_CLEANUP; then fonts are awaited and
# the visual viewport to capture is returned. Same steps, so the same pixels as page.screenshot.
#
# One step more: the page is painted afresh before every capture, so its pixels depend on what
# the page is now, not on which states of it happened to be painted before. Chromium applies
# an opacity change to an element it painted earlier without painting it again: an element
# first painted half-faded (a jQuery fadeIn, say) keeps the offscreen layer of that paint, and
# its anti-aliased edges come out a level or two off from the same element painted at opacity 1.
# Page time only moves inside the clock's steps, but real frames fall between the step's
# timers wherever the machine's timing puts them, so whether a fade was painted half-way
# differed from run to run. A style sheet the page cannot see (adopted, so no DOM mutation and
# no MutationObserver record) puts a no-op filter on the root element for one painted frame:
# a new effect above everything makes Chromium record every layer again, and removing it does
# so once more, from the page's current state. The capture then paints that state.
SCREENSHOT_PREPARE = r"""
async (fontsMs) => {
  const repaint = async (n) => {
    let sheet = null;
    try {
      sheet = new CSSStyleSheet();
      sheet.replaceSync(":root { filter: opacity(1) !important; }");
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    } catch (e) { return; }  // a page that broke adoptedStyleSheets is captured as it is
    // A frame's paint runs in the same task as its animation-frame callbacks: a task queued from
    // the callback runs once that frame is painted. Hidden pages get no frames: 100 ms at most.
    await new Promise(resolve => {
      const t = n.setTimeout(resolve, 100);
      n.raf(() => { n.clearTimeout(t); n.setTimeout(resolve, 0); });
    });
    try { document.adoptedStyleSheets = document.adoptedStyleSheets.filter(s => s !== sheet); } catch (e) {}
  };
  const roots = [];
  const collect = (root) => {
    roots.push(root);
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    do {
      const node = walker.currentNode;
      const shadow = node instanceof Element ? node.shadowRoot : null;
      if (shadow) collect(shadow);
    } while (walker.nextNode());
  };
  collect(document);
  const cleanups = [];
  const carets = new Map();
  for (const root of roots) {
    root.querySelectorAll("input,textarea,[contenteditable]").forEach((el) => {
      const style = el.style;
      carets.set(el, {value: style.getPropertyValue("caret-color"),
                      priority: style.getPropertyPriority("caret-color")});
      el.style.setProperty("caret-color", "transparent", "important");
    });
  }
  cleanups.push(() => { for (const [el, v] of carets) el.style.setProperty("caret-color", v.value, v.priority); });
  const paused = new Set();
  const handle = (root) => {
    for (const animation of root.getAnimations()) {
      if (!animation.effect || animation.playbackRate === 0 || paused.has(animation)) continue;
      if (Number.isFinite(animation.effect.getComputedTiming().endTime)) {
        try { animation.finish(); } catch (e) {}
      } else {
        try { animation.cancel(); paused.add(animation); } catch (e) {}
      }
    }
  };
  for (const root of roots) {
    const onRoot = handle.bind(null, root);
    onRoot();
    root.addEventListener("transitionrun", onRoot);
    root.addEventListener("animationstart", onRoot);
    cleanups.push(() => {
      root.removeEventListener("transitionrun", onRoot);
      root.removeEventListener("animationstart", onRoot);
    });
  }
  cleanups.push(() => { for (const animation of paused) { try { animation.play(); } catch (e) {} } });
  window.__iwrScreenshotCleanup = () => { for (const c of cleanups) c(); delete window.__iwrScreenshotCleanup; };
  const n = window.__iwrNative;
  if (document.fonts && n) await Promise.race([document.fonts.ready, new Promise(r => n.setTimeout(r, fontsMs))]);
  if (n) await repaint(n);
  const v = window.visualViewport;
  return v ? [v.pageLeft, v.pageTop, v.scale] : [scrollX, scrollY, 1];
}
"""
SCREENSHOT_CLEANUP = "() => window.__iwrScreenshotCleanup && window.__iwrScreenshotCleanup()"

# iwr-det-3 (settle.layout_stable): is the layout still moving? Finite CSS animations and
# transitions still running are finished at once (what the screenshot's animations="disabled"
# does anyway, but early enough that their end events and the handlers they start, such as a
# chart resizing after a sidebar transition, run before page time moves on); then the boxes of
# the first elements are compared across two animation frames. Returns whether anything ran or moved.
LAYOUT_SCRIPT = r"""
async ({maxElements}) => {
  const n = window.__iwrNative;
  if (!n) return {finished: 0, moved: 0};
  let finished = 0;
  const endless = [];  // targets of infinite animations (spinners, marquees): they move by design
  try {
    for (const a of document.getAnimations()) {
      const timing = a.effect && a.effect.getComputedTiming ? a.effect.getComputedTiming() : null;
      if (a.playState !== "running" || !timing) continue;
      if (Number.isFinite(timing.endTime)) { a.finish(); finished++; }
      else if (a.effect.target) endless.push(a.effect.target);
    }
  } catch (e) { /* a page that broke the Web Animations API is judged as it is */ }
  const still = (el) => !endless.some((t) => t === el || t.contains(el));
  const frame = () => new Promise(resolve => {
    const t = n.setTimeout(resolve, 100);
    n.raf(() => { n.clearTimeout(t); resolve(); });
  });
  const boxes = () => {
    const out = [];
    const all = document.body ? document.body.getElementsByTagName("*") : [];
    for (let i = 0; i < all.length && out.length < maxElements; i++) {
      if (endless.length && !still(all[i])) continue;
      const r = all[i].getBoundingClientRect();
      if (r.width || r.height) out.push([r.left, r.top, r.width, r.height]);
    }
    return out;
  };
  await frame();
  const first = boxes();
  await frame();
  const second = boxes();
  let moved = first.length !== second.length ? 1 : 0;
  for (let i = 0; !moved && i < first.length; i++) {
    if (first[i].some((v, j) => Math.abs(v - second[i][j]) > 0.5)) moved = 1;
  }
  return {finished, moved};
}
"""

# iwr-det-3 (settle.page_time_animations): CSS transitions and animations run on page time, not
# real time. The document timeline is stopped through DevTools (Animation.setPlaybackRate 0, kept
# across the page's documents), so in real time nothing animates, however long a settle waits or
# however slow the machine is; page time moves animations instead. This script moves every running
# animation on by ``dt`` ms of page time (at its own playback rate), waits one frame when any of them
# reached its end (their end events, such as transitionend, are dispatched in the frame's animation
# update, so their handlers run before page time moves again), and returns how long, in page time,
# until the next finite animation ends (null: none runs), so the clock's step can stop exactly there.
ANIMATION_STEP_SCRIPT = r"""
async ({dt, pausedAt}) => {
  const n = window.__iwrNative;
  const clock = window.__pwClock && window.__pwClock.controller;
  if (clock && clock._now && !clock.__iwrAligned) {
    // Once per document, before its page time first moves. Playwright's clock counts timer ticks
    // apart from the wall-clock time it reports (Date), and each document's clock starts a few real
    // milliseconds off, so animation frames (every 16 ticks) fell at a different Date.now() on every
    // run: a carousel easing by Date between frames moved to a different spot. The ticks are set to
    // the page time since the clock was paused, and the timers already set move with them.
    Date.now();  // the document's clock applies install and pause first (it does so at its first use)
    const target = clock._now.time - pausedAt;
    if (Number.isFinite(target) && target >= 0 && clock._timers) {
      const shift = target - clock._now.ticks;
      clock._now.ticks = target;
      for (const timer of clock._timers.values()) timer.callAt += shift;
    }
    // Playwright's clock also yields to the event loop after every timer it fires: a real frame
    // (scroll events, resize observers) could run in the middle of a clock step, at a page time that
    // depends on the machine's speed. Going on in a microtask makes a clock step one uninterrupted
    // task: whatever real frames bring happens between steps, at the same page time on every run.
    if (clock._embedder) clock._embedder = Object.assign({}, clock._embedder, {postTask: (t) => queueMicrotask(t)});
    clock.__iwrAligned = true;
  }
  const running = () => {
    try { return document.getAnimations().filter((a) => a.playState === "running"); } catch (e) { return []; }
  };
  let ended = 0;
  if (dt > 0) {
    for (const a of running()) {
      try {
        const end = a.effect ? a.effect.getComputedTiming().endTime : Infinity;
        a.currentTime = (a.currentTime || 0) + dt * a.playbackRate;
        if (Number.isFinite(end) && a.playbackRate > 0 && a.currentTime >= end) ended++;
      } catch (e) { /* an animation the page broke stays where it is */ }
    }
    if (ended && n) {
      await new Promise((resolve) => {
        const t = n.setTimeout(resolve, 100);  // hidden pages get no frames
        n.raf(() => { n.clearTimeout(t); n.setTimeout(resolve, 0); });
      });
    }
  }
  let next = null;
  for (const a of running()) {
    try {
      const end = a.effect.getComputedTiming().endTime;
      if (!Number.isFinite(end) || a.playbackRate <= 0) continue;
      const left = (end - (a.currentTime || 0)) / a.playbackRate;
      if (left >= 0 && (next === null || left < next)) next = left;
    } catch (e) {}
  }
  return {next, ended};
}
"""

COUNTS_SCRIPT = "() => window.__iwrCounts ? Object.assign({}, window.__iwrCounts) : {}"

# Runs a page function (or expression) and returns its value as JSON text: Playwright's own
# serialisation of large results (page state, candidate lists) costs several times more in the
# page, the driver and Python than JSON.stringify and json.loads. Undefined becomes null, as
# Playwright gives None; a value JSON cannot carry exactly (NaN, Infinity, -0, BigInt, cycles)
# returns null instead of text and the caller evaluates the original the usual way.
JSON_RESULT_HEAD = "async (__iwrArg) => {\nconst __iwrValue = (\n"
JSON_RESULT_TAIL = r"""
);
  const result = typeof __iwrValue === "function" ? await __iwrValue(__iwrArg) : await __iwrValue;
  let exact = true;
  const keep = (key, v) => {
    if (v === undefined) return null;
    if (typeof v === "bigint" || (typeof v === "number" && (!Number.isFinite(v) || Object.is(v, -0)))) exact = false;
    return v;
  };
  try {
    const text = JSON.stringify(result, keep);
    return exact ? text : null;
  } catch (e) {
    return null;
  }
}
"""
