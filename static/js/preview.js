// Submission page, live preview: render the sandboxed frame at the task's own viewport size and
// scale it down to the width available (the page's layout then matches what the judge saw), and
// switch tasks in place. Without this script the frame simply fills its box and the task picker
// reloads the page.
(function () {
  "use strict";
  var stage = document.getElementById("preview-stage");
  var select = document.getElementById("preview-task");
  if (!stage || !select) return;
  document.documentElement.classList.add("js");
  var frame = document.getElementById("preview-frame");
  var open = document.getElementById("preview-open");
  var size = document.getElementById("preview-size");

  function fit() {
    var width = Number(stage.getAttribute("data-width")) || 1280;
    var height = Number(stage.getAttribute("data-height")) || 720;
    var scale = Math.min(1, stage.clientWidth / width);
    stage.style.setProperty("--preview-w", width + "px");
    stage.style.setProperty("--preview-h", height + "px");
    stage.style.setProperty("--preview-k", String(scale));
    stage.style.setProperty("--preview-x", Math.max(0, (stage.clientWidth - width * scale) / 2) + "px");  // small viewports: centred
    stage.style.height = Math.round(height * scale) + "px";
    stage.classList.add("scaled");
  }

  function show(option) {
    stage.setAttribute("data-width", option.getAttribute("data-width"));
    stage.setAttribute("data-height", option.getAttribute("data-height"));
    frame.src = option.getAttribute("data-src");
    frame.title = "Submitted page for task " + option.value;
    if (open) open.href = option.getAttribute("data-src");
    if (size) size.textContent = option.getAttribute("data-width") + "\u00d7" + option.getAttribute("data-height");
    fit();
    var params = new URLSearchParams(window.location.search);
    params.set("preview", option.value);
    window.history.replaceState(null, "", "?" + params.toString() + "#preview");
  }

  var lastWidth = -1;
  function refit() {  // only a change of width matters (fit itself changes the height)
    if (stage.clientWidth === lastWidth) return;
    lastWidth = stage.clientWidth;
    fit();
  }

  select.addEventListener("change", function () { show(select.options[select.selectedIndex]); });
  if ("ResizeObserver" in window) new ResizeObserver(refit).observe(stage);
  else window.addEventListener("resize", refit);
  refit();
})();
