// Collects every element an action could target, in one round trip.
// Called by evaluator.agents.targeting as page.evaluate(source, options); returns plain data
// and keeps the elements themselves in a hidden window property so Python can take a handle
// to the chosen one afterwards (index into that list).
(opts) => {
  const INTERACTIVE_TAGS = new Set(["a", "button", "input", "select", "textarea", "summary", "label"]);
  const INTERACTIVE_ROLES = new Set([
    "button", "link", "checkbox", "radio", "tab", "menuitem", "menuitemcheckbox", "menuitemradio",
    "option", "switch", "textbox", "searchbox", "combobox", "slider", "spinbutton", "treeitem",
    "gridcell", "listbox",
  ]);
  const SKIP_TAGS = new Set(["html", "body", "head", "script", "style", "noscript", "template",
    "option", "optgroup", "br", "meta", "link", "title"]);
  const NON_TEXT_INPUTS = new Set(["button", "submit", "reset", "checkbox", "radio", "file", "hidden",
    "image", "range", "color"]);
  const LANDMARK_TAGS = new Set(["header", "nav", "footer", "aside", "main", "form", "dialog", "menu"]);
  const CLICK_EVENTS = ["click", "mousedown", "mouseup", "pointerdown", "pointerup", "touchstart", "dblclick"];
  const vw = window.innerWidth, vh = window.innerHeight;
  const DATA_SKIP = /^data-(v-|react|testid|test|cy|qa|reactid|bs-|toggle$|target$|ref$)/;
  const maxText = opts.maxText || 400;
  const clip = (s) => (s || "").replace(/\s+/g, " ").trim().slice(0, maxText);

  const jq = window.jQuery || window.$;
  const jqData = jq && typeof jq._data === "function" ? jq._data : null;
  const jqDelegated = [];
  if (jqData) {
    for (const root of [document, document.body]) {
      let events = null;
      try { events = root && jqData(root, "events"); } catch (e) { events = null; }
      for (const type of CLICK_EVENTS) {
        for (const h of (events && events[type]) || []) if (h && h.selector) jqDelegated.push(h.selector);
      }
    }
  }

  function jqueryBound(el) {
    if (!jqData) return false;
    let events = null;
    try { events = jqData(el, "events"); } catch (e) { return false; }
    if (events && CLICK_EVENTS.some((t) => events[t] && events[t].length)) return true;
    return jqDelegated.some((sel) => { try { return el.matches(sel); } catch (e) { return false; } });
  }

  function isEditable(el, tag) {
    if (el.disabled || el.readOnly) return false;
    if (tag === "textarea") return true;
    if (tag === "input") return !NON_TEXT_INPUTS.has((el.type || "text").toLowerCase());
    return el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable);
  }

  const DELEGATED_TEXT_MAX = 40;
  function dataLabelled(el) {
    return Array.from(el.attributes).some((a) => a.name.startsWith("data-") && !DATA_SKIP.test(a.name));
  }
  function delegatedBy(el) {
    const tracked = window.__iwrHasClickListener;
    for (let node = el.parentElement; node && node !== document.body; node = node.parentElement) {
      if (typeof tracked === "function" && tracked(node)) return true;
      if (node.hasAttribute("onclick") || typeof node.onclick === "function" || jqueryBound(node)) return true;
    }
    return false;
  }

  function interactiveReasons(el, tag, style) {
    const reasons = [];
    if (INTERACTIVE_TAGS.has(tag)) reasons.push("tag");
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) reasons.push("contenteditable");
    const role = (el.getAttribute("role") || "").trim().toLowerCase();
    if (INTERACTIVE_ROLES.has(role)) reasons.push("role");
    const tabindex = el.getAttribute("tabindex");
    if (tabindex !== null && parseInt(tabindex, 10) >= 0) reasons.push("tabindex");
    if (el.classList && el.classList.contains("btn")) reasons.push("btn");
    if (el.hasAttribute("onclick") || typeof el.onclick === "function") reasons.push("onclick");
    const tracked = window.__iwrHasClickListener;
    if (typeof tracked === "function" && tracked(el)) reasons.push("listener");
    if (jqueryBound(el)) reasons.push("jquery");
    // iwr-det-3 (attributeLabels): an SVG shape or group labelled in data-* (a board's square) is a
    // target even when the click handler sits on the drawing around it.
    if (opts.attributeLabels && el instanceof SVGElement && tag !== "svg" && dataLabelled(el)) {
      reasons.push("svg-label");
    }
    // iwr-det-12 (delegatedCells): an element labelled in data-* (a calendar's day) whose clicks an ancestor
    // handles for it (delegation: one listener on the calendar) is a target, as iwr-det-3's SVG labels are.
    if (opts.delegatedCells && !reasons.length && !(el instanceof SVGElement) && dataLabelled(el) &&
        (el.textContent || "").trim().length <= DELEGATED_TEXT_MAX && delegatedBy(el)) {
      reasons.push("delegated-label");
    }
    // iwr-det-15 (heading_targets): "click the big heading 'Welcome'" (to close an open menu by clicking away)
    // names a heading, which is clicked although nothing on it listens.
    if (opts.headings && !reasons.length && /^h[1-6]$/.test(tag)) reasons.push("heading");
    if (style.cursor === "pointer") {
      // cursor is inherited: only the outermost element of a pointer region counts
      const parent = el.parentElement;
      if (!parent || getComputedStyle(parent).cursor !== "pointer") reasons.push("pointer");
    }
    return reasons;
  }

  function effectivelyTransparent(el) {
    if (typeof el.checkVisibility === "function") {
      const visible = el.checkVisibility({
        opacityProperty: true, visibilityProperty: true, checkOpacity: true, checkVisibilityCSS: true,
      });
      if (!visible) return true;
    }
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      const s = getComputedStyle(node);
      if (parseFloat(s.opacity) === 0 || s.visibility === "hidden" || s.visibility === "collapse") return true;
    }
    return false;
  }

  // Clipped away by an ancestor: hidden for good (overflow hidden) or until scrolled (auto/scroll).
  function clipState(el, rect) {
    const cx = rect.left + rect.width / 2, cy = rect.top + rect.height / 2;
    let fixed = false;
    for (let node = el.parentElement; node && node !== document.body && node !== document.documentElement;
         node = node.parentElement) {
      const s = getComputedStyle(node);
      if (s.position === "fixed") fixed = true;
      if (s.overflowX === "visible" && s.overflowY === "visible") continue;
      const r = node.getBoundingClientRect();
      const outside = cx < r.left || cx > r.right || cy < r.top || cy > r.bottom;
      if (!outside) continue;
      const scrollable = /(auto|scroll)/.test(s.overflowX + " " + s.overflowY);
      return scrollable ? "scroll" : "clipped";
    }
    if (getComputedStyle(el).position === "fixed") fixed = true;
    return fixed ? "fixed" : "none";
  }

  function hitState(el, rect) {
    const cx = rect.left + rect.width / 2, cy = rect.top + rect.height / 2;
    if (cx < 0 || cy < 0 || cx >= vw || cy >= vh) return "offscreen";
    const root = el.getRootNode && el.getRootNode().elementFromPoint ? el.getRootNode() : document;
    const hit = root.elementFromPoint(cx, cy);
    if (!hit) return "covered";
    if (hit === el || el.contains(hit)) return "self";
    const label = hit.closest && hit.closest("label");
    if (label && label.control === el) return "label";
    if (el.tagName === "LABEL" && el.control && (el.control === hit || el.control.contains(hit))) return "label";
    return "covered";
  }

  function reachable(rect, clipped) {
    if (clipped === "clipped") return false;
    if (clipped === "fixed") return rect.right > 0 && rect.bottom > 0 && rect.left < vw && rect.top < vh;
    const docW = Math.max(document.documentElement.scrollWidth, vw);
    const docH = Math.max(document.documentElement.scrollHeight, vh);
    const x = rect.left + window.scrollX + rect.width / 2, y = rect.top + window.scrollY + rect.height / 2;
    return x >= 0 && y >= 0 && x <= docW && y <= docH;
  }

  function textOf(ids) {
    return clip(ids.split(/\s+/).map((id) => {
      const ref = id && document.getElementById(id);
      return ref ? ref.innerText || ref.textContent : "";
    }).join(" "));
  }

  function iconClasses(el) {
    const out = [];
    const nodes = el.querySelectorAll("i, svg, span, use, img");
    for (let i = 0; i < nodes.length && out.length < 6; i++) {
      const n = nodes[i];
      const cls = n.getAttribute("class");
      if (cls && !clip(n.textContent)) out.push(cls);
      const href = n.getAttribute("href") || n.getAttribute("xlink:href");
      if (n.tagName.toLowerCase() === "use" && href) out.push(href);
      const icon = n.getAttribute("data-icon");
      if (icon) out.push(icon);
    }
    return out;
  }

  function imageTexts(el, tag) {
    const alts = [], titles = [];
    const imgs = tag === "img" ? [el] : Array.from(el.querySelectorAll("img, [role=img], svg")).slice(0, 6);
    for (const img of imgs) {
      const alt = img.getAttribute("alt") || img.getAttribute("aria-label");
      if (alt) alts.push(alt);
      const t = img.querySelector && img.querySelector("title");
      if (t && t.textContent) titles.push(t.textContent);
    }
    return {alt: clip(alts.join(" ")), svgTitle: clip(titles.join(" ")), images: imgs.length};
  }

  function context(el) {
    const out = [];
    for (let node = el.parentElement; node && node !== document.body && out.length < 12; node = node.parentElement) {
      const tag = node.tagName.toLowerCase();
      if (LANDMARK_TAGS.has(tag)) out.push(tag);
      const role = node.getAttribute("role");
      if (role) out.push(role);
      if (node.id) out.push(node.id);
      const cls = node.getAttribute("class");
      if (cls) out.push(cls);
    }
    return out;
  }

  // Text of the nearest enclosing block that says more than the element ("Pear ... Add"):
  // lets "the Add button for the Pear" tell look-alike buttons apart.
  function containerText(el, ownLength) {
    let node = el.parentElement;
    for (let depth = 0; node && node !== document.body && depth < 5; depth++, node = node.parentElement) {
      const text = (node.innerText || "").replace(/\s+/g, " ").trim();
      if (text.length > 600) return "";
      if (text.length > ownLength + 2) return text.slice(0, 300);
    }
    return "";
  }

  // iwr-det-3 (attributeLabels): labels held in attributes (data-square="e2", data-date=...) and the
  // text of SVG shapes, which innerText does not give.
  function attributeLabels(el, tag) {
    const out = [];
    for (const attr of el.attributes) {
      if (!attr.name.startsWith("data-") || DATA_SKIP.test(attr.name)) continue;
      const v = (attr.value || "").trim();
      if (v && v.length <= 40 && !/^[\[{]/.test(v)) out.push(v);
      if (out.length >= 6) break;
    }
    if (el instanceof SVGElement) {
      const t = clip(el.textContent);
      if (t) out.push(t);
      const title = el.querySelector && el.querySelector("title");
      if (title && title.textContent) out.push(clip(title.textContent));
    }
    return out;
  }

  // iwr-det-3 (pictures): a CSS background image on the element or a child shows a picture.
  function backgroundImage(el, style) {
    if (/url\(/.test(style.backgroundImage || "")) return true;
    const kids = el.children;
    for (let i = 0; i < kids.length && i < 6; i++) {
      if (/url\(/.test(getComputedStyle(kids[i]).backgroundImage || "")) return true;
    }
    return !!el.querySelector("picture, canvas");
  }

  // iwr-det-4 (colours): the colours an element paints, each with the size of the part painting it:
  // its background and thick borders (its own box), its text or icon colour where it shows text
  // or an icon, its ::before / ::after marks, an SVG's fill and stroke. [r, g, b, width, height].
  const RGB = /rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?/;
  function rgb(value) {
    const m = RGB.exec(value || "");
    if (!m) return null;
    let alpha = m[4] === undefined ? 1 : parseFloat(m[4]);
    if (m[4] && m[4].endsWith("%")) alpha /= 100;
    return alpha >= 0.5 ? [Math.round(+m[1]), Math.round(+m[2]), Math.round(+m[3])] : null;
  }
  function paint(out, value, w, h) {
    const c = rgb(value);
    if (c && w > 0 && h > 0 && out.length < 10) out.push([...c, Math.round(w), Math.round(h)]);
  }
  function paintedParts(s, w, h, out) {
    paint(out, s.backgroundColor, w, h);
    for (const side of ["Top", "Right", "Bottom", "Left"]) {
      if (parseFloat(s["border" + side + "Width"]) >= 2 && s["border" + side + "Style"] !== "none") {
        paint(out, s["border" + side + "Color"], w, h);
      }
    }
  }
  function paintedColours(el, style, rect, fullText) {
    const out = [];
    if (el instanceof SVGElement) {
      paint(out, style.fill, rect.width, rect.height);
      paint(out, style.stroke, rect.width, rect.height);
    }
    paintedParts(style, rect.width, rect.height, out);
    const fontSize = parseFloat(style.fontSize) || 16;
    const icon = el.querySelector && el.querySelector("i, svg, [class*='icon']");
    if ((fullText && fontSize >= 6) || icon) {
      paint(out, icon ? getComputedStyle(icon).color : style.color, fontSize, fontSize);
    }
    for (const pseudo of ["::before", "::after"]) {
      const ps = getComputedStyle(el, pseudo);
      if (!ps.content || ps.content === "none" || ps.display === "none") continue;
      const side = (a, b) => (parseFloat(ps[a]) || 0) + (parseFloat(ps[b]) || 0);
      const pw = (parseFloat(ps.width) || 0) + side("borderLeftWidth", "borderRightWidth");
      const ph = (parseFloat(ps.height) || 0) + side("borderTopWidth", "borderBottomWidth");
      paintedParts(ps, pw || rect.width, ph || rect.height, out);
    }
    // iwr-det-11 (child_fill_colours): a textless control whose child fills most of its box (a colour swatch's
    // inner square) paints that child's colours.
    if (opts.childFill && !fullText && rect.width > 0 && rect.height > 0) {
      const kids = el.children;
      for (let i = 0; i < kids.length && i < 4; i++) {
        const r = kids[i].getBoundingClientRect();
        if (r.width * r.height >= 0.5 * rect.width * rect.height) paintedParts(getComputedStyle(kids[i]), r.width, r.height, out);
      }
    }
    return out;
  }

  // iwr-det-7 (drawn_glyphs): an icon drawn by CSS, with no character, class or label naming it.
  // Three bars: one part painting three thin horizontal marks (itself and its ::before / ::after,
  // the usual hamburger), or three empty thin sibling marks stacked in one column.
  function thinMark(s, w, h) {
    const side = (a) => parseFloat(s["border" + a + "Width"]) || 0;
    const painted = rgb(s.backgroundColor) || ["Top", "Bottom"].some((a) => side(a) >= 2 && s["border" + a + "Style"] !== "none");
    const height = h + side("Top") + side("Bottom");
    return !!painted && height > 0 && height <= 6 && w >= 10 && w >= 3 * height;
  }
  function pseudoMarks(n) {
    let marks = 0;
    for (const pseudo of ["::before", "::after"]) {
      const ps = getComputedStyle(n, pseudo);
      if (!ps.content || ps.content === "none" || ps.display === "none") continue;
      if (thinMark(ps, parseFloat(ps.width) || 0, parseFloat(ps.height) || 0)) marks++;
    }
    return marks;
  }
  function drawnGlyphs(el) {
    const parts = [el, ...Array.from(el.querySelectorAll("span, i, b, em, div, ins")).slice(0, 12)];
    for (const n of parts) {
      if (clip(n.textContent) && n !== el) continue;
      const r = n.getBoundingClientRect();  // a part other than the control itself is textless here
      const own = n !== el && thinMark(getComputedStyle(n), r.width, r.height) ? 1 : 0;
      if (own + pseudoMarks(n) >= 3) return ["bars"];
      const kids = Array.from(n.children).filter((k) => !clip(k.textContent));
      const thin = kids.filter((k) => { const b = k.getBoundingClientRect(); return thinMark(getComputedStyle(k), b.width, b.height); });
      if (thin.length >= 3) return ["bars"];
    }
    return [];
  }

  // iwr-det-15 (generated_glyphs): a glyph written by CSS generated content: the control's or a textless part's
  // ::before / ::after whose content is one symbol character (a collapsible menu's '+' / '-' toggle box).
  const CONTROLS = "a, button, summary, label, select, [role], [tabindex]";
  const ONE_SYMBOL = /^["']([^\p{L}\p{N}\s"'])["']$/u;
  // iwr-det-16 (glyph_points): with `points`, where each glyph a textless part draws sits, as [glyph, x, y]: the part's
  // centre from the top-left corner of el's padding box (where a click's position is measured from).
  function generatedGlyphs(el, points) {
    const out = [];
    const parts = [el, ...Array.from(el.querySelectorAll("span, i, b, em, div, ins")).slice(0, 12)];
    for (const n of parts) {
      if (n !== el && clip(n.textContent)) continue;
      const owner = n.parentElement && n.parentElement.closest(CONTROLS);  // a part of a control inside el is its
      if (n !== el && owner && owner !== el && el.contains(owner)) continue;  // glyph, not el's (a list's toggles)
      for (const pseudo of ["::before", "::after"]) {
        const ps = getComputedStyle(n, pseudo);
        if (!ps.content || ps.content === "none" || ps.display === "none" || ps.visibility === "hidden") continue;
        const m = ONE_SYMBOL.exec(ps.content.trim());
        if (!m) continue;
        if (!out.includes(m[1])) out.push(m[1]);
        if (points && n !== el) {
          const r = n.getBoundingClientRect(), box = el.getBoundingClientRect();
          if (r.width >= 1 && r.height >= 1) {
            points.push([m[1], r.left + r.width / 2 - box.left - el.clientLeft, r.top + r.height / 2 - box.top - el.clientTop]);
          }
        }
      }
    }
    return out;
  }

  // iwr-det-14 (dot_nouns): a pager's dot: a small control (48 px at most) that itself, or a part of it, draws a
  // bullet character in its ::before / ::after, or is a small round painted mark (a circle of 3 to 24 px).
  const BULLETS = /^["']?[•●○◦∙⚫⚪]["']?$/;
  function roundMark(s, w, h) {
    const side = (a) => parseFloat(s["border" + a + "Width"]) || 0;
    const width = w + side("Left") + side("Right"), height = h + side("Top") + side("Bottom");
    const painted = rgb(s.backgroundColor) || (side("Top") >= 1 && s.borderTopStyle !== "none" && rgb(s.borderTopColor));
    const radius = parseFloat(s.borderTopLeftRadius) || 0;
    return !!painted && width >= 3 && width <= 24 && Math.abs(width - height) <= 2 && radius >= 0.4 * width;
  }
  function showsDot(el, rect) {
    if (rect.width > 48 || rect.height > 48) return false;
    const parts = [el, ...Array.from(el.querySelectorAll("*")).slice(0, 6)];
    for (const n of parts) {
      const r = n.getBoundingClientRect();
      if (n !== el && roundMark(getComputedStyle(n), r.width, r.height)) return true;
      for (const pseudo of ["::before", "::after"]) {
        const ps = getComputedStyle(n, pseudo);
        if (!ps.content || ps.content === "none" || ps.display === "none") continue;
        if (BULLETS.test(ps.content.trim()) || roundMark(ps, parseFloat(ps.width) || 0, parseFloat(ps.height) || 0)) return true;
      }
    }
    return roundMark(getComputedStyle(el), rect.width, rect.height);
  }

  // iwr-det-13 (swatch_nouns): "the colour box": an element that shows a colour sample, a small textless box (itself,
  // or a part of it, up to two levels down) painting an opaque background unlike the one behind it, or a colour input.
  function opaque(value) { return rgb(value) !== null; }
  function behind(n) {
    for (let p = n.parentElement; p; p = p.parentElement) {
      const bg = getComputedStyle(p).backgroundColor;
      if (opaque(bg)) return bg;
    }
    return "rgb(255, 255, 255)";
  }
  function showsSwatch(el, tag, fullText) {
    if (tag === "input") return (el.type || "").toLowerCase() === "color";
    if (fullText.length > 2) return false;
    const parts = [el];
    for (const kid of el.children) {
      parts.push(kid);
      for (const grandchild of kid.children) parts.push(grandchild);
      if (parts.length > 12) break;
    }
    for (const n of parts.slice(0, 12)) {
      if (n !== el && clip(n.textContent)) continue;
      const r = n.getBoundingClientRect(), small = Math.min(r.width, r.height), large = Math.max(r.width, r.height);
      if (small < 6 || large > 40 || large > 2.5 * small) continue;
      const bg = getComputedStyle(n).backgroundColor;
      if (opaque(bg) && bg !== behind(n)) return true;
    }
    return false;
  }

  // iwr-det-15 (captions): a form field nothing names ("<label for=fullname>" beside an input that has a name
  // but no id, or no label at all; no aria-label, placeholder or title either) is named to a reader by the words
  // printed right before it: the nearest visible text before it in the document, when that text sits just above
  // the field (overlapping its columns, at most two of its heights away) or just left of it on its row. Only
  // short texts.
  const CAPTION_FIELDS = /^(input|select|textarea)$/;
  const CAPTION_MAX = 60;
  function caption(el, tag, rect) {
    if (!CAPTION_FIELDS.test(tag) || (el.labels && el.labels.length) || el.getAttribute("aria-label") ||
        el.hasAttribute("aria-labelledby") || el.getAttribute("placeholder") || el.getAttribute("title")) return "";
    if (tag === "input" && /^(button|submit|reset|image|hidden)$/i.test(el.type || "")) return "";
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    walker.currentNode = el;
    for (let node = walker.previousNode(), seen = 0; node && seen < 8; node = walker.previousNode(), seen++) {
      const text = node.data.replace(/\s+/g, " ").trim();
      const parent = node.parentElement;
      if (!text || !parent || SKIP_TAGS.has(parent.tagName.toLowerCase())) continue;
      const r = shown(parent) && boxOf(node);
      if (!r) continue;  // hidden text is printed nowhere
      if (text.length > CAPTION_MAX) return "";
      const above = r.bottom <= rect.top + 2 && rect.top - r.bottom <= 2 * Math.max(rect.height, 16) &&
        r.left < rect.right && r.right > rect.left;
      const left = r.right <= rect.left + 2 && rect.left - r.right <= 3 * Math.max(rect.height, 16) &&
        r.top < rect.bottom && r.bottom > rect.top;
      return above || left ? text : "";
    }
    return "";
  }

  function describe(el, tag, style, rect, reasons, hit, clipped, order) {
    const labels = el.labels ? Array.from(el.labels).map((l) => l.innerText || l.textContent).join(" ") : "";
    const img = imageTexts(el, tag);
    const type = (el.getAttribute("type") || "").toLowerCase();
    const buttonValue = tag === "input" && /^(button|submit|reset)$/.test(type) ? el.value : "";
    const fullText = (el.innerText || "").replace(/\s+/g, " ").trim();
    const extra = {};
    if (opts.attributeLabels) extra.data_labels = attributeLabels(el, tag);
    if (opts.pictures) extra.bg_image = backgroundImage(el, style);
    if (opts.colours) extra.colours = paintedColours(el, style, rect, fullText);
    if (opts.drawnGlyphs) extra.drawn = drawnGlyphs(el);
    if (opts.generatedGlyphs) {
      const points = opts.glyphPoints ? [] : null;
      extra.generated = generatedGlyphs(el, points);
      if (points && points.length) extra.glyph_points = points;
    }
    if (opts.dots && showsDot(el, rect)) extra.drawn = [...(extra.drawn || []), "dot"];
    if (opts.repeat) extra.previous = el === window.__iwrPreviousTarget;  // the element the last action used
    if (opts.swatches) extra.swatch = showsSwatch(el, tag, fullText);
    if (opts.captions) extra.caption = caption(el, tag, rect);
    return {
      ...extra,
      order, tag, type,
      role: (el.getAttribute("role") || "").trim().toLowerCase(),
      aria_label: clip(el.getAttribute("aria-label")),
      labelledby: el.hasAttribute("aria-labelledby") ? textOf(el.getAttribute("aria-labelledby")) : "",
      label: clip(labels),
      text: fullText.slice(0, maxText),
      text_len: fullText.length,
      alt: img.alt, svg_title: img.svgTitle, images: img.images,
      title: clip(el.getAttribute("title")),
      placeholder: clip(el.getAttribute("placeholder")),
      value: clip(buttonValue),
      id: el.id || "", cls: el.getAttribute("class") || "", name: el.getAttribute("name") || "",
      href: el.getAttribute("href") || "", src: el.getAttribute("src") || "",
      icons: iconClasses(el), context: context(el), container: containerText(el, fullText.length),
      box: [rect.left, rect.top, rect.width, rect.height],
      in_viewport: hit === "self" || hit === "label", hit, clipped,
      reasons, editable: isEditable(el, tag), disabled: !!el.disabled || el.getAttribute("aria-disabled") === "true",
      fixed: clipped === "fixed", cursor: style.cursor, focused: el === document.activeElement,
    };
  }

  // Anchors of relative position cues ("to the left of the input"): visible elements matching
  // the spec's selector and naming its text, else visible text naming it. Boxes only. Text is
  // read node by node (bounded), never the whole subtree of every element, so a deep or huge
  // page costs what its text costs.
  const words = (s) => " " + (s || "").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim() + " ";
  const MAX_TEXT_NODES = 20000;
  function shown(el) {
    const r = el.getBoundingClientRect();
    if (!(r.width > 0 && r.height > 0)) return null;
    if (effectivelyTransparent(el)) return null;
    return r;
  }
  function ownName(el, withoutLabels) {
    const labels = el.labels && !withoutLabels ? Array.from(el.labels).map((l) => l.textContent).join(" ") : "";
    // iwr-det-3 (shownValues): a checkbox's or radio button's value is never shown, so it names nothing
    const hidden = opts.shownValues && el.tagName === "INPUT" && /^(checkbox|radio)$/i.test(el.type || "");
    return [el.getAttribute("aria-label"), el.getAttribute("placeholder"), el.getAttribute("title"),
      el.getAttribute("alt"), el.tagName === "INPUT" && !hidden ? el.value : "", labels].join(" ");
  }
  function boxOf(node) {
    const range = document.createRange();
    range.selectNodeContents(node);
    const r = range.getBoundingClientRect();
    return r.width > 0 && r.height > 0 ? r : null;
  }
  // The phrase in one text node; else in the text of a node's parent or grandparent (split by
  // inline markup: "Walk <b>the</b> dog"), the deepest such element.
  function textAnchors(says, limit) {
    const found = [], parents = new Set();
    if (!document.body) return found;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    let visited = 0;
    for (let node = walker.nextNode(); node && visited < MAX_TEXT_NODES && found.length < limit;
         node = walker.nextNode(), visited++) {
      const parent = node.parentElement;
      if (!parent || SKIP_TAGS.has(parent.tagName.toLowerCase()) || !node.data.trim()) continue;
      if (says(node.data)) {
        const r = shown(parent) && boxOf(node);
        if (r) found.push(r);
      } else {
        parents.add(parent);
        if (parent.parentElement) parents.add(parent.parentElement);
      }
    }
    if (found.length) return found;
    for (const el of parents) {
      if (found.length >= limit) break;
      if (el === document.body || !says(el.textContent)) continue;
      if (Array.from(el.children).some((c) => parents.has(c) && says(c.textContent))) continue;
      const r = shown(el) && boxOf(el);
      if (r) found.push(r);
    }
    return found;
  }
  // iwr-det-13 (view_anchors): an anchor the page shows in the viewport is the one meant ("under 'Result'" on a
  // page with thirty 'Result' labels); more are looked at, and those in view kept when there are any. An anchor
  // named by its kind and words none of that kind says is the element of that kind in view, if any.
  const inView = (r) => r.left < innerWidth && r.right > 0 && r.top < innerHeight && r.bottom > 0;
  function anchorBoxes(spec) {
    const found = anchorsOf(spec, opts.viewAnchors ? 200 : 20);
    if (!opts.viewAnchors) return found;
    const seen = found.filter(inView);
    return seen.length ? seen : found.slice(0, 20);
  }
  function anchorsOf(spec, limit) {
    const phrase = words(spec.text), found = [];
    const says = (s) => phrase.trim() !== "" && words(s).includes(phrase);
    if (spec.selector) {
      let matches = [];
      try { matches = Array.from(document.querySelectorAll(spec.selector)); } catch (e) { matches = []; }
      const kind = [];  // iwr-det-13: elements of the kind in view, whatever they say ("below the example code")
      for (const el of matches.slice(0, 2000)) {
        if (found.length >= limit) break;
        // iwr-det-14 (pictureAnchors): an image that failed to load shows no picture
        if (opts.pictureAnchors && el.tagName === "IMG" && el.complete && !el.naturalWidth) continue;
        const r = shown(el);
        if (r && (!phrase.trim() || says(ownName(el)) || says(el.innerText || el.textContent))) found.push(r);
        else if (r && opts.viewAnchors && inView(r)) kind.push(r);
      }
      if (found.length || !phrase.trim()) return found;
      if (kind.length) return kind;
    }
    if (!phrase.trim()) return found;
    for (const el of document.querySelectorAll("[aria-label], [placeholder], [title], [alt], input, textarea")) {
      if (found.length >= limit) break;
      // iwr-det-17 (labelAnchors): a label shows its words where it prints them, not in the field it names; a
      // field only its label names is no anchor, and the label's printed text is found below
      const r = says(ownName(el, opts.labelAnchors)) && shown(el);
      if (r) found.push(r);
    }
    return found.length ? found : textAnchors(says, limit);
  }
  const anchors = (opts.anchors || []).map((spec) =>
    anchorBoxes(spec).map((r) => [r.left, r.top, r.width, r.height]));

  const elements = [];
  const out = [];
  let scanned = 0;
  const all = document.querySelectorAll("*");
  for (let order = 0; order < all.length; order++) {
    const el = all[order];
    const tag = el.tagName.toLowerCase();
    if (SKIP_TAGS.has(tag)) continue;
    scanned++;
    const rect = el.getBoundingClientRect();
    if (!(rect.width > 0 && rect.height > 0)) continue;
    const style = getComputedStyle(el);
    const reasons = interactiveReasons(el, tag, style);
    if (!reasons.length) continue;
    if (opts.editableOnly && !isEditable(el, tag)) continue;
    if (effectivelyTransparent(el)) continue;
    const clipped = clipState(el, rect);
    if (clipped === "clipped") continue;
    // inside a scroll container but scrolled out of its view: reachable once scrolled there
    const hit = clipped === "scroll" ? "scroll" : hitState(el, rect);
    if (hit === "covered") continue;
    if (hit === "offscreen" && !reachable(rect, clipped)) continue;
    out.push(describe(el, tag, style, rect, reasons, hit, clipped, order));
    elements.push(el);
    if (out.length >= (opts.maxCandidates || 3000)) break;
  }
  Object.defineProperty(window, "__iwrTargets", {value: elements, configurable: true, writable: true, enumerable: false});
  return {
    candidates: out, scanned, anchors,
    viewport: [vw, vh], scroll: [window.scrollX, window.scrollY],
    document: [document.documentElement.scrollWidth, document.documentElement.scrollHeight],
  };
}
