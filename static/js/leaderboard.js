/* Leaderboard page: filters apply on change, ticking two rows compares them, and hovering a
 * row highlights every entry whose 95% interval overlaps its own (a statistical tie). The
 * page works without this script: filters have an Apply button, sorting is done by links. */
(function () {
  "use strict";

  function autoSubmitFilters() {
    var form = document.getElementById("lb-filters");
    if (!form) return;
    form.querySelectorAll("[data-js-hide]").forEach(function (element) { element.hidden = true; });
    form.addEventListener("change", function () { form.submit(); });
  }

  function compareSelection() {
    var form = document.getElementById("compare-form");
    var button = document.getElementById("compare-button");
    var hint = document.getElementById("compare-hint");
    if (!form || !button) return;
    var order = [];
    function update() {
      button.disabled = order.length !== 2;
      if (hint) hint.textContent = order.length === 2 ? "Ready: compare the two ticked entries."
        : "Tick two rows to compare them task by task (" + order.length + " of 2).";
    }
    form.addEventListener("change", function (event) {
      var box = event.target;
      if (box.name !== "e") return;
      order = order.filter(function (other) { return other !== box; });
      if (box.checked) order.push(box);
      while (order.length > 2) order.shift().checked = false;
      update();
    });
    form.querySelectorAll("input[name=e]:checked").forEach(function (box) { order.push(box); });
    update();
  }

  function interval(row) {
    var lo = parseFloat(row.getAttribute("data-lo")), hi = parseFloat(row.getAttribute("data-hi"));
    var value = parseFloat(row.getAttribute("data-final"));
    return isNaN(lo) || isNaN(hi) ? [value, value] : [lo, hi];
  }

  function tieHighlights() {
    var table = document.getElementById("leaderboard-table");
    if (!table) return;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    function clear() { rows.forEach(function (row) { row.classList.remove("overlap", "hovered"); }); }
    rows.forEach(function (row) {
      row.addEventListener("mouseenter", function () {
        var mine = interval(row);
        rows.forEach(function (other) {
          var theirs = interval(other);
          other.classList.toggle("overlap", other !== row && mine[0] <= theirs[1] && theirs[0] <= mine[1]);
        });
        row.classList.add("hovered");
      });
      row.addEventListener("mouseleave", clear);
    });
  }

  function start() { autoSubmitFilters(); compareSelection(); tieHighlights(); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
