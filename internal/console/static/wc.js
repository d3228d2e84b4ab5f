// quarry console, Wallcrawler session page: plays the replay's frames
// (the page shows the last frame and links every frame without it), and
// the DOM recording with rrweb's Replayer (vendored, loaded before this
// script), showing the page's last state until Play.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var fig = document.getElementById("dom-player");
  if (!fig || typeof rrweb === "undefined") return;
  var stage = document.getElementById("dom-stage"), status = document.getElementById("dom-status");
  fetch(fig.getAttribute("data-src"), { credentials: "same-origin" }).then(function (r) {
    if (!r.ok) throw new Error("HTTP " + r.status);
    return r.json();
  }).then(function (events) {
    if (events.length < 2) { status.textContent = "Too little of the page was recorded to replay it."; return; }
    var rep = new rrweb.Replayer(events, { root: stage, mouseTail: false, skipInactive: true, showWarning: false });
    var total = rep.getMetaData().totalTime;
    function fit(w, h) {
      var wrap = stage.querySelector(".replayer-wrapper");
      if (!wrap || !(w > 0)) return;
      var k = Math.min(1, stage.clientWidth / w);
      wrap.style.transform = "scale(" + k + ")";
      wrap.style.transformOrigin = "0 0";
      stage.style.height = Math.ceil(h * k) + "px";
    }
    rep.on("resize", function (d) { fit(d.width, d.height); });
    var bar = document.createElement("div");
    bar.className = "row";
    var play = document.createElement("button");
    play.type = "button"; play.id = "dom-play"; play.textContent = "Play";
    var range = document.createElement("input");
    range.type = "range"; range.id = "dom-pos"; range.min = "0"; range.max = String(total); range.value = String(total);
    range.setAttribute("aria-label", "Time in the recording");
    bar.appendChild(play); bar.appendChild(range);
    fig.insertBefore(bar, fig.querySelector("figcaption"));
    var playing = false, timer = 0;
    function label(t) { status.textContent = (t / 1000).toFixed(1) + " s of " + (total / 1000).toFixed(1) + " s"; }
    function stop() { playing = false; clearInterval(timer); play.textContent = "Play"; }
    rep.on("finish", function () { stop(); range.value = String(total); label(total); });
    play.addEventListener("click", function () {
      if (playing) { rep.pause(); stop(); return; }
      var from = parseInt(range.value, 10);
      if (from >= total) from = 0;
      rep.play(from); playing = true; play.textContent = "Pause";
      timer = setInterval(function () { var t = rep.getCurrentTime(); range.value = String(t); label(t); }, 200);
    });
    // seek shows the page at time t: rrweb's Replayer applies the events
    // before the time it pauses at, so the end is a millisecond past the
    // last event.
    function seek(t) { rep.pause(t >= total ? total + 1 : t); label(t); }
    range.addEventListener("input", function () { stop(); seek(parseInt(range.value, 10)); });
    seek(total);
    fig.setAttribute("data-ready", "1");
  }).catch(function (e) { status.textContent = "The DOM replay could not load: " + e.message; });
});
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
