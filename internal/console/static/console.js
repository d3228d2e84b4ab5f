// quarry console: the only script. Forms marked data-confirm ask before
// they are sent and then skip the server's confirmation page; elements
// marked data-refresh reload the page every N seconds while it is visible;
// a checkbox marked data-select-all (hidden until this script shows it)
// ticks every box of its table's body; a select marked data-type-select
// shows only its form's fieldsets whose data-for-type is the selected
// type; an empty input marked data-timezone is filled with the browser's
// time zone. Everything works without it.
"use strict";
document.addEventListener("submit", function (e) {
  var f = e.target;
  var q = f.getAttribute("data-confirm");
  if (!q) return;
  if (!window.confirm(q)) { e.preventDefault(); return; }
  if (!f.querySelector("input[name=confirm]")) {
    var i = document.createElement("input");
    i.type = "hidden"; i.name = "confirm"; i.value = "yes";
    f.appendChild(i);
  }
});
document.addEventListener("DOMContentLoaded", function () {
  var el = document.querySelector("[data-refresh]");
  if (!el) return;
  var s = parseInt(el.getAttribute("data-refresh"), 10);
  if (!(s > 0)) return;
  setInterval(function () {
    if (document.visibilityState === "visible" && !document.querySelector("form:focus-within")) location.reload();
  }, s * 1000);
});
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("input[data-select-all]").forEach(function (all) {
    all.hidden = false;
    all.addEventListener("change", function () {
      all.closest("table").querySelectorAll("tbody input[type=checkbox]").forEach(function (c) { c.checked = all.checked; });
    });
  });
  document.querySelectorAll("select[data-type-select]").forEach(function (sel) {
    var show = function () {
      sel.form.querySelectorAll("fieldset[data-for-type]").forEach(function (fs) {
        fs.hidden = fs.getAttribute("data-for-type") !== sel.value;
      });
    };
    sel.addEventListener("change", show);
    show();
  });
  document.querySelectorAll("input[data-timezone]").forEach(function (el) {
    if (el.value) return;
    try { el.value = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { /* keep it empty */ }
  });
});
