// quarry console, Wallcrawler session page: plays the replay's frames
// (the page shows the last frame and links every frame without it).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var fig = document.getElementById("player");
  if (!fig) return;
  var n = parseInt(fig.getAttribute("data-frames"), 10), base = fig.getAttribute("data-base");
  var img = document.getElementById("replay-frame"), label = document.getElementById("replay-time");
  var times = Array.prototype.map.call(document.querySelectorAll("#frames a"), function (a) { return a.getAttribute("data-time"); });
  if (!(n > 0)) return;
  var bar = document.createElement("div");
  bar.className = "row";
  var play = document.createElement("button");
  play.type = "button"; play.id = "replay-play"; play.textContent = "Play";
  var range = document.createElement("input");
  range.type = "range"; range.id = "replay-pos"; range.min = "0"; range.max = String(n - 1); range.value = String(n - 1);
  range.setAttribute("aria-label", "Frame");
  bar.appendChild(play); bar.appendChild(range);
  fig.appendChild(bar);
  var cur = n - 1, timer = 0;
  function show(i) {
    cur = i; range.value = String(i);
    img.src = base + i + ".jpg";
    label.textContent = "Frame " + (i + 1) + " of " + n + (times[i] ? " · " + times[i] : "");
  }
  function stop() { clearInterval(timer); timer = 0; play.textContent = "Play"; }
  play.addEventListener("click", function () {
    if (timer) { stop(); return; }
    if (cur >= n - 1) show(0);
    play.textContent = "Pause";
    timer = setInterval(function () { if (cur >= n - 1) { stop(); return; } show(cur + 1); }, 250);
  });
  range.addEventListener("input", function () { stop(); show(parseInt(range.value, 10)); });
});
