// Submission page: poll the small progress endpoint while the submission is live (pages being
// generated from a model endpoint, queued, or being scored) and update status, progress bar,
// scores, failure reason, per-task rows and the log in place. The server says whether to keep
// polling ("live"); polls slow down while nothing changes. When the submission finishes the page
// reloads once, so the intervals, rank, category charts and preview are drawn by the server.
(function () {
  "use strict";
  var card = document.getElementById("status-card");
  if (!card) return;
  var url = card.getAttribute("data-progress-url");
  var LIVE = { generating: true, queued: true, running: true };
  var FIRST_MS = 2000, SLOWEST_MS = 15000;
  var delay = FIRST_MS;
  var lastSeen = "";

  function percent(value) { return value === null || value === undefined ? "" : (100 * value).toFixed(2); }

  function isLive(state) { return typeof state.live === "boolean" ? state.live : !!LIVE[state.status]; }

  function text(id, value) {
    var node = document.getElementById(id);
    if (node) node.textContent = value;
  }

  function showStatus(state) {
    var badge = document.getElementById("status-badge");
    badge.textContent = state.status;
    badge.className = "badge " + state.status + (state.status === "generating" ? " running" : "");
    card.setAttribute("data-status", state.status);
    var done = state.progress.tasks_done, total = state.progress.tasks_total;
    document.getElementById("progress-block").hidden = !(state.status === "queued" || state.status === "running");
    var queued = document.getElementById("queue-note");
    if (queued) queued.hidden = state.status !== "queued";
    var bar = document.getElementById("progress-bar");
    bar.style.width = (total ? Math.round(100 * done / total) : 0) + "%";
    bar.parentNode.setAttribute("aria-valuenow", String(done));
    bar.parentNode.setAttribute("aria-valuemax", String(total));
    text("progress-text", done + " of " + total + " tasks scored");
    var cancel = document.getElementById("cancel-form");
    if (cancel && !isLive(state)) cancel.hidden = true;
    showGeneration(state);
  }

  function showGeneration(state) {
    var note = document.getElementById("generation-note");
    if (!note) return;
    var generating = state.status === "generating";
    note.querySelector("[data-generating]").hidden = !generating;
    note.querySelector("[data-generated]").hidden = generating;
    var job = state.generation;
    if (job) text("generation-progress", " (" + job.tasks_done + " of " + job.tasks_total + " tasks done)");
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
    ["final", "ifs", "vfs", "low_level", "high_level"].forEach(function (name) {
      var value = scores.querySelector('[data-score="' + name + '"]');
      if (value) value.textContent = percent(state.scores[name]);
      var interval = scores.querySelector('[data-ci="' + name + '"]');
      var low = state.scores[name + "_ci_low"], high = state.scores[name + "_ci_high"];
      if (interval) interval.textContent = low === null || low === undefined ? "" : "95% CI " + percent(low) + "\u2013" + percent(high);
    });
  }

  function cell(row, value, className) {
    var td = document.createElement("td");
    if (className) td.className = className;
    td.textContent = value;
    row.appendChild(td);
    return td;
  }

  function badge(parent, label) {
    var span = document.createElement("span");
    span.className = "badge";
    span.textContent = label;
    parent.appendChild(span);
  }

  function link(parent, label, href) {
    var a = document.createElement("a");
    a.className = "button small secondary";
    a.href = href;
    a.textContent = label;
    parent.appendChild(a);
  }

  // The same markup as templates/leaderboard/replays/_task_table.html.
  function taskRow(task, previewPage) {
    var row = document.createElement("tr");
    cell(row, task.key, "mono");
    var categories = cell(row, "", "hide-mobile");
    badge(categories, task.interaction);
    badge(categories, task.visual);
    var domain = document.createElement("span");
    domain.className = "small muted";
    domain.textContent = " " + task.domain;
    categories.appendChild(domain);
    var final = cell(row, "", "num");
    final.appendChild(document.createElement("strong")).textContent = task.final;
    cell(row, task.ifs, "num");
    cell(row, task.vfs, "num");
    cell(row, task.steps_passed + "/" + task.steps_total, "num");
    cell(row, task.reason || "", "small");
    var links = cell(row, "", "row-links");
    link(links, "Replay", task.replay_url);
    if (previewPage) link(links, "Preview", previewPage + "?preview=" + encodeURIComponent(task.key) + "#preview");
    return row;
  }

  function showTasks(rows) {
    var body = document.getElementById("task-rows");
    if (!body || !rows.length) return;
    var previewPage = document.getElementById("task-table").getAttribute("data-preview-page");
    body.textContent = "";
    rows.forEach(function (task) { body.appendChild(taskRow(task, previewPage)); });
  }

  function showLog(state) {
    var holder = document.getElementById("log-card");
    if (!holder || !state.log) return;
    document.getElementById("evaluator-log").textContent = state.log;
    holder.hidden = false;
  }

  function later() {
    window.setTimeout(poll, delay);
    delay = Math.min(SLOWEST_MS, Math.round(delay * 1.3));
  }

  function update(state) {
    var seen = state.status + ":" + state.progress.tasks_done;
    if (seen !== lastSeen) delay = FIRST_MS;  // something moved: look again soon
    lastSeen = seen;
    showStatus(state);
    showOutcome(state);
    showTasks(state.rows || []);
    showLog(state);
    if (isLive(state)) later();
    else window.location.reload();  // finished: the server draws intervals, rank and charts
  }

  function poll() {
    var request = new XMLHttpRequest();
    request.open("GET", url);
    request.setRequestHeader("Accept", "application/json");
    request.addEventListener("load", function () {
      if (request.status !== 200) { later(); return; }
      update(JSON.parse(request.responseText));
    });
    request.addEventListener("error", later);
    request.send();
  }

  if (card.getAttribute("data-live") === "1") later();
})();
