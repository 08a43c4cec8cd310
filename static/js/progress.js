// Submission page: poll the small progress endpoint while the evaluation is queued or
// running and update status, progress bar, scores, failure reason, per-task rows and the
// log in place (no reload). Polling stops once the evaluation has finished.
(function () {
  "use strict";
  var card = document.getElementById("status-card");
  if (!card) return;
  var url = card.getAttribute("data-progress-url");
  var LIVE = { queued: true, running: true };
  var INTERVAL_MS = 2000;

  function percent(value) { return value === null || value === undefined ? "" : (100 * value).toFixed(2); }

  function text(id, value) {
    var node = document.getElementById(id);
    if (node) node.textContent = value;
  }

  function showStatus(state) {
    var badge = document.getElementById("status-badge");
    badge.textContent = state.status;
    badge.className = "badge " + state.status;
    card.setAttribute("data-status", state.status);
    var done = state.progress.tasks_done, total = state.progress.tasks_total;
    document.getElementById("progress-block").hidden = !LIVE[state.status];
    var bar = document.getElementById("progress-bar");
    bar.style.width = (total ? Math.round(100 * done / total) : 0) + "%";
    bar.parentNode.setAttribute("aria-valuenow", String(done));
    text("progress-text", done + " of " + total + " tasks scored");
    var cancel = document.getElementById("cancel-form");
    if (cancel && !LIVE[state.status]) cancel.hidden = true;
  }

  function showOutcome(state) {
    var failure = document.getElementById("failure");
    failure.hidden = !state.failure;
    if (state.failure) {
      text("failure-kind", state.failure.kind_label);
      text("failure-reason", state.failure.reason);
    }
    var scores = document.getElementById("scores");
    scores.hidden = !state.scores;
    if (!state.scores) return;
    ["final", "ifs", "vfs"].forEach(function (name) {
      scores.querySelector('[data-score="' + name + '"]').textContent = percent(state.scores[name]);
      var low = state.scores[name + "_ci_low"], high = state.scores[name + "_ci_high"];
      scores.querySelector('[data-ci="' + name + '"]').textContent =
        low === null || low === undefined ? "" : "95% CI " + percent(low) + "-" + percent(high);
    });
  }

  function cell(row, value, numeric) {
    var td = document.createElement("td");
    if (numeric) td.className = "num";
    td.textContent = value;
    row.appendChild(td);
  }

  function showTasks(tasks) {
    var body = document.getElementById("task-rows");
    if (!tasks.length) return;
    body.innerHTML = "";
    tasks.forEach(function (task) {
      var row = document.createElement("tr");
      cell(row, task.task);
      cell(row, percent(task.final), true);
      cell(row, percent(task.ifs), true);
      cell(row, percent(task.vfs), true);
      cell(row, task.steps_passed + "/" + task.steps_total, true);
      cell(row, task.error || "");
      body.appendChild(row);
    });
  }

  function showLog(state) {
    var holder = document.getElementById("log-card");
    if (!holder || !state.log) return;
    document.getElementById("evaluator-log").textContent = state.log;
    holder.hidden = false;
  }

  function poll() {
    var request = new XMLHttpRequest();
    request.open("GET", url);
    request.setRequestHeader("Accept", "application/json");
    request.addEventListener("load", function () {
      if (request.status !== 200) { window.setTimeout(poll, INTERVAL_MS * 3); return; }
      var state = JSON.parse(request.responseText);
      showStatus(state);
      showOutcome(state);
      showTasks(state.tasks || []);
      showLog(state);
      if (LIVE[state.status]) window.setTimeout(poll, INTERVAL_MS);
    });
    request.addEventListener("error", function () { window.setTimeout(poll, INTERVAL_MS * 3); });
    request.send();
  }

  if (LIVE[card.getAttribute("data-status")]) window.setTimeout(poll, INTERVAL_MS);
})();
