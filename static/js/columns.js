/* Leaderboard column chooser: ticking a column off hides it (the choice is kept in this browser).
 * Without this script every column shows and the chooser stays hidden. */
(function () {
  "use strict";
  var KEY = "iwr-hidden-columns";

  function stored() {
    try { return JSON.parse(window.localStorage.getItem(KEY) || "[]"); } catch (error) { return []; }
  }

  function save(hidden) {
    try { window.localStorage.setItem(KEY, JSON.stringify(hidden)); } catch (error) { /* private mode */ }
  }

  function apply(table, hidden) {
    table.querySelectorAll("[class*='col-']").forEach(function (cell) {
      var match = /(?:^|\s)col-(\w+)/.exec(cell.className);
      cell.hidden = Boolean(match && hidden.indexOf(match[1]) !== -1);
    });
  }

  function init() {
    var chooser = document.getElementById("lb-columns");
    var table = document.getElementById("leaderboard-table");
    if (!chooser || !table) return;
    var hidden = stored();
    chooser.hidden = false;
    chooser.querySelectorAll("input[data-column]").forEach(function (box) {
      box.checked = hidden.indexOf(box.dataset.column) === -1;
      box.addEventListener("change", function (event) {
        event.stopPropagation();  // not a filter change: the filters form must not submit
        hidden = hidden.filter(function (name) { return name !== box.dataset.column; });
        if (!box.checked) hidden.push(box.dataset.column);
        save(hidden);
        apply(table, hidden);
      });
    });
    apply(table, hidden);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
