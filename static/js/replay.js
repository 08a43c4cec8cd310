/* Replay pages: every video of a [data-replay] block shares one play/pause button and one
 * seek bar (positions are fractions of each video's length, since the task's recording and
 * the evaluator's replay have different durations); a video moved any other way (its own
 * controls, picture-in-picture, a script) takes the others along to the same fraction.
 * Clicking a step on a timeline shows that step's panel and moves the videos to it. Without
 * this script every step panel is simply shown one after another. */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function clock(seconds) {
    if (!isFinite(seconds)) seconds = 0;
    var whole = Math.floor(seconds);
    return Math.floor(whole / 60) + ":" + String(whole % 60).padStart(2, "0");
  }

  function Replay(root) {
    this.root = root;
    this.videos = Array.prototype.slice.call(root.querySelectorAll("video[data-sync]"));
    this.controls = root.querySelector("[data-controls]");
    this.play = root.querySelector("[data-play]");
    this.seek = root.querySelector("[data-seek]");
    this.time = root.querySelector("[data-time]");
    this.moved = new Set();  // videos these controls are seeking: their "seeked" must not move the others back
    if (this.videos.length && this.controls) this.setUpControls();
    this.setUpTimelines();
  }

  Replay.prototype.longest = function () {
    return this.videos.reduce(function (best, video) {
      return !best || (video.duration || 0) > (best.duration || 0) ? video : best;
    }, null);
  };

  Replay.prototype.playing = function () {
    return this.videos.some(function (video) { return !video.paused && !video.ended; });
  };

  Replay.prototype.setUpControls = function () {
    var self = this;
    this.controls.hidden = false;
    this.play.addEventListener("click", function () { self.toggle(); });
    this.seek.addEventListener("input", function () { self.seekTo(self.seek.value / 1000); });
    this.videos.forEach(function (video) {
      video.addEventListener("timeupdate", function () { self.showTime(); });
      video.addEventListener("loadedmetadata", function () { self.showTime(); });
      video.addEventListener("ended", function () { if (!self.playing()) self.label(false); });
      video.addEventListener("seeked", function () { self.follow(video); });
    });
  };

  Replay.prototype.move = function (video, time) {
    if (!video.duration) return;
    this.moved.add(video);
    video.currentTime = Math.min(video.duration, Math.max(0, time));
  };

  /* After a seek these controls did not make, put every other video at the same fraction. */
  Replay.prototype.follow = function (leader) {
    if (this.moved.delete(leader) || !leader.duration) return;
    var self = this, fraction = leader.currentTime / leader.duration;
    this.videos.forEach(function (video) {
      if (video !== leader) self.move(video, fraction * video.duration);
    });
    this.showTime();
  };

  Replay.prototype.label = function (playing) {
    this.play.innerHTML = playing ? "&#10074;&#10074; Pause" : "&#9654; Play";
    this.play.setAttribute("aria-label", playing ? "Pause every video" : "Play every video");
  };

  Replay.prototype.toggle = function () {
    var start = !this.playing();
    this.videos.forEach(function (video) {
      if (start) {
        if (video.ended) video.currentTime = 0;
        var promise = video.play();
        if (promise && promise.catch) promise.catch(function () {});
      } else {
        video.pause();
      }
    });
    this.label(start);
  };

  Replay.prototype.seekTo = function (fraction) {
    var self = this;
    this.videos.forEach(function (video) { self.move(video, fraction * video.duration); });
    this.showTime();
  };

  Replay.prototype.showTime = function () {
    var master = this.longest();
    if (!master || !this.time) return;
    var fraction = master.duration ? master.currentTime / master.duration : 0;
    this.seek.value = Math.round(fraction * 1000);
    this.time.textContent = clock(master.currentTime) + " / " + clock(master.duration);
  };

  Replay.prototype.setUpTimelines = function () {
    var self = this;
    this.root.querySelectorAll("[data-timeline]").forEach(function (timeline) {
      var group = timeline.getAttribute("data-timeline");
      var buttons = Array.prototype.slice.call(timeline.querySelectorAll("button[data-step]"));
      var panels = self.root.querySelectorAll('[data-panel="' + group + '"]');
      function show(button, moveVideos) {
        buttons.forEach(function (other) { other.setAttribute("aria-pressed", String(other === button)); });
        panels.forEach(function (panel) { panel.hidden = panel.id !== button.getAttribute("data-step"); });
        if (moveVideos) self.goToStep(group, button);
      }
      buttons.forEach(function (button, index) {
        button.addEventListener("click", function () { show(button, true); });
        button.addEventListener("keydown", function (event) {
          var next = event.key === "ArrowRight" ? buttons[index + 1] : event.key === "ArrowLeft" ? buttons[index - 1] : null;
          if (next) { event.preventDefault(); next.focus(); show(next, true); }
        });
      });
      var first = buttons.filter(function (button) { return button.classList.contains("fail"); })[0] || buttons[0];
      if (first) show(first, false);
    });
  };

  Replay.prototype.stepTime = function (player, index) {
    var button = this.root.querySelector('[data-timeline="' + player + '"] button[data-index="' + index + '"]');
    return button ? parseFloat(button.getAttribute("data-time")) : NaN;
  };

  Replay.prototype.goToStep = function (_group, button) {
    var self = this;
    var index = parseInt(button.getAttribute("data-index"), 10);
    var total = parseInt(button.getAttribute("data-total"), 10) || 1;
    this.videos.forEach(function (video) {
      video.pause();
      if (!video.duration) return;
      var player = video.getAttribute("data-player");
      var time = player === null ? NaN : self.stepTime(player, index);
      if (!isNaN(time)) {  // a replay: the moment this step's screenshot was taken
        self.move(video, time - 0.05);
      } else if (!isNaN(index)) {  // the task's recording: the same share of the task (approximate)
        self.move(video, (index / total) * video.duration);
      }
    });
    if (this.play) this.label(false);
  };

  function start() {
    document.querySelectorAll("[data-replay]").forEach(function (root) { new Replay(root); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
