// Submit page: refuse an oversized or non-zip bundle before uploading it, then upload with
// XMLHttpRequest so a progress bar can show the bytes sent. The server validates again and
// answers with the form (every problem listed) or where to go next. Without JavaScript the
// form posts normally.
(function () {
  "use strict";
  var card = document.getElementById("form-card");
  if (!card || !window.FormData || !window.XMLHttpRequest) return;

  function megabytes(bytes) { return (bytes / 1048576).toFixed(1) + " MB"; }

  function showProblem(form, message) {
    var field = form.querySelector("#field-bundle");
    var list = field.querySelector("ul.errorlist.client");
    if (!list) {
      list = document.createElement("ul");
      list.className = "errorlist client";
      field.appendChild(list);
    }
    list.innerHTML = "";
    var item = document.createElement("li");
    item.textContent = message;
    list.appendChild(item);
  }

  function checkFile(form) {
    var input = form.querySelector("input[type=file][name=bundle]");
    var file = input && input.files && input.files[0];
    if (!file) return "Choose the bundle (.zip) to upload.";
    if (!/\.zip$/i.test(file.name)) return "The bundle must be a .zip file (got " + file.name + ").";
    var limit = parseInt(input.getAttribute("data-max-bytes"), 10);
    if (limit && file.size > limit) {
      return "The bundle is " + megabytes(file.size) + "; the limit is " + megabytes(limit) + ".";
    }
    return null;
  }

  function setProgress(form, fraction, text) {
    var status = form.querySelector("#upload-status");
    var bar = form.querySelector("#upload-bar");
    var holder = bar.parentNode;
    status.hidden = false;
    bar.style.width = Math.round(fraction * 100) + "%";
    holder.setAttribute("aria-valuenow", String(Math.round(fraction * 100)));
    form.querySelector("#upload-text").textContent = text;
  }

  function upload(form, submitter) {
    var button = form.querySelector("#submit-button");
    var request = new XMLHttpRequest();
    request.open("POST", form.action);
    request.setRequestHeader("X-Requested-With", "XMLHttpRequest");
    request.upload.addEventListener("progress", function (event) {
      if (!event.lengthComputable) return;
      var text = "Uploading: " + megabytes(event.loaded) + " of " + megabytes(event.total);
      setProgress(form, event.loaded / event.total, text);
    });
    request.upload.addEventListener("load", function () {
      setProgress(form, 1, "Uploaded. Checking the bundle against every task...");
    });
    request.addEventListener("load", function () { answered(request, form); });
    request.addEventListener("error", function () {
      button.disabled = false;
      setProgress(form, 0, "The upload failed (network error). Try again.");
    });
    button.disabled = true;
    var data = new FormData(form);
    // "Check only" asks for a dry run; FormData leaves out the button that submitted the form.
    if (submitter && submitter.name === "check_only") data.append("check_only", "1");
    request.send(data);
  }

  function answered(request, form) {
    var data = null;
    try { data = JSON.parse(request.responseText); } catch (error) { data = null; }
    if (data && data.redirect) {
      window.location.assign(data.redirect);
    } else if (data && data.form_html) {
      card.innerHTML = data.form_html;
      bind();
      var problems = card.querySelector("#form-problems");
      if (problems) window.scrollTo(0, problems.getBoundingClientRect().top + window.scrollY - 80);
    } else {
      form.querySelector("#submit-button").disabled = false;
      setProgress(form, 0, "The server answered " + request.status + "; try again later.");
    }
  }

  function bind() {
    var form = card.querySelector("#submit-form");
    if (!form) return;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var problem = checkFile(form);
      if (problem) { showProblem(form, problem); return; }
      upload(form, event.submitter);
    });
  }

  bind();
})();
