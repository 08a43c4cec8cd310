// The reference page's visible text and text blocks at one checkpoint (see docs/tasks.md).
// A block is one text node (or a form field's shown value or placeholder) with the box of
// that text clipped to the viewport, the colour the text shows in and the first opaque
// background colour behind it. Text that is hidden, outside the viewport or covered by
// another element is not visible and not reported.
() => {
  const W = window.innerWidth, H = window.innerHeight;
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "TITLE", "OPTION"]);

  const rgba = (css) => {
    const m = /rgba?\(([^)]+)\)/.exec(css || "");
    if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] >= 0.5) return c.slice(0, 3).map(Math.round);
    }
    return [255, 255, 255];
  };
  const shown = (el) => el.checkVisibility
    ? el.checkVisibility({opacityProperty: true, visibilityProperty: true})
    : getComputedStyle(el).visibility !== "hidden";
  const clip = (r) => {
    const x0 = Math.max(0, r.left), y0 = Math.max(0, r.top);
    const x1 = Math.min(W, r.right), y1 = Math.min(H, r.bottom);
    return x1 - x0 >= 1 && y1 - y0 >= 1 ? [x0, y0, x1, y1] : null;
  };
  /* covered_text.js */

  const blocks = [];
  // One block per visible text node (or field); ``start`` is where its first line begins.
  const add = (el, text, rects) => {
    if (!rects.length || coveredText(el, rects[0])) return;
    const box = rects.reduce((u, c) => [Math.min(u[0], c[0]), Math.min(u[1], c[1]),
                                        Math.max(u[2], c[2]), Math.max(u[3], c[3])]);
    const style = getComputedStyle(el);
    const bg = background(el);
    const c = rgba(style.color);  // translucent text: the colour it shows over its background
    blocks.push({
      text,
      box: [box[0], box[1], box[2] - box[0], box[3] - box[1]].map(Math.round),
      color: [0, 1, 2].map((i) => Math.round(c[i] * c[3] + bg[i] * (1 - c[3]))),
      bg,
      start: [rects[0][1], rects[0][0]],
    });
  };

  const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.nodeValue.replace(/\s+/g, " ").trim();
    const el = node.parentElement;
    if (!text || !el || SKIP.has(el.tagName) || !shown(el)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    add(el, text, [...range.getClientRects()].map(clip).filter(Boolean));
  }
  // Form fields come after the text nodes: they are blocks (their text is on screen) but not
  // part of ``text``, which holds what the page's text nodes say, like innerText does.
  const textBlocks = blocks.length;
  for (const el of document.querySelectorAll("input, textarea, select")) {
    const type = (el.getAttribute("type") || "").toLowerCase();
    if (["hidden", "checkbox", "radio", "range", "color", "file", "image"].includes(type) || !shown(el)) continue;
    if (type === "password" && el.value) continue;  // it shows dots, not text
    const shownText = el.tagName === "SELECT" ? (el.selectedOptions[0] || {}).text || "" : el.value || el.placeholder || "";
    const text = shownText.replace(/\s+/g, " ").trim();
    const box = clip(el.getBoundingClientRect());
    if (text && box) add(el, text, [box]);
  }
  blocks.slice(textBlocks).forEach((b) => { b.field = true; });

  // Reading order: rows top to bottom (a block starting within 4 px of the row's first block
  // joins the row), then left to right within a row.
  blocks.sort((a, b) => a.start[0] - b.start[0] || a.start[1] - b.start[1]);
  const rows = [];
  for (const b of blocks) {
    const row = rows[rows.length - 1];
    if (row && b.start[0] - row[0].start[0] <= 4) row.push(b); else rows.push([b]);
  }
  const ordered = rows.flatMap((row) => row.sort((a, b) => a.start[1] - b.start[1] || a.start[0] - b.start[0]));
  const text = ordered.filter((b) => !b.field).map((b) => b.text).join("\n");
  ordered.forEach((b) => { delete b.start; delete b.field; });
  return {
    url: location.href,
    scroll: [Math.round(window.scrollX), Math.round(window.scrollY)],
    viewport: [W, H],
    text,
    blocks: ordered,
  };
}
