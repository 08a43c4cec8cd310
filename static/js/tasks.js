// Task list: apply a filter as soon as it changes (the Filter button stays for no-JS use).
(function () {
  "use strict";
  var form = document.getElementById("task-filters");
  if (!form) return;
  form.addEventListener("change", function (event) {
    if (event.target.tagName === "SELECT") form.submit();
  });
})();
