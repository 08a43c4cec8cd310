// Whether the text of element ``el`` whose first line shows in ``box`` ([x0, y0, x1, y1] in the
// viewport) is covered: something that paints lies on top of the box's centre (a background colour
// at least half opaque, a background image, an image, canvas, video, frame or form field: a
// dropdown, a modal, a tile over the tiles it merged). A transparent box on top, such as a
// full-width row of links, hides nothing. The one rule for the reference's recorded visible text
// (visible_text.js) and the judge's page reading (evaluator/judges/state.py, from iwr-det-17 on).
function coveredText(el, box) {
  const hit = document.elementFromPoint((box[0] + box[2]) / 2, (box[1] + box[3]) / 2);
  if (!hit || hit === el || el.contains(hit) || hit.contains(el)) return false;
  const opaque = (css) => {
    const m = /rgba?\(([^)]+)\)/.exec(css || "");
    if (!m) return false;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return (p.length > 3 ? p[3] : 1) >= 0.5;
  };
  const PAINTED = ["IMG", "CANVAS", "VIDEO", "IFRAME", "INPUT", "TEXTAREA", "SELECT", "svg"];
  for (let e = hit; e && !e.contains(el); e = e.parentElement) {
    const s = getComputedStyle(e);
    if (opaque(s.backgroundColor) || s.backgroundImage !== "none" || PAINTED.includes(e.tagName)) return true;
  }
  return false;
}
