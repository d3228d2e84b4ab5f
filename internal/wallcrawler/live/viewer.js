// Wallcrawler live view: draws the JPEG frames quarry relays over a
// WebSocket and, unless view-only, sends the viewer's input back as small
// JSON messages (see conn.go). No dependencies.
(function () {
  "use strict";
  var canvas = document.getElementById("screen");
  var status = document.getElementById("status");
  var g = canvas.getContext("2d");
  var page = { width: 0, height: 0 };
  var viewOnly = new URLSearchParams(location.search).get("mode") === "view";
  var drawn = { x: 0, y: 0, w: 1, h: 1 };

  document.documentElement.style.height = "100%";
  Object.assign(document.body.style, { margin: "0", height: "100%", background: "#111", overflow: "hidden" });
  Object.assign(canvas.style, { display: "block", width: "100vw", height: "100vh", outline: "none" });
  Object.assign(status.style, {
    position: "fixed", left: "8px", bottom: "8px", color: "#ddd", font: "12px system-ui, sans-serif",
    background: "rgba(0,0,0,.6)", padding: "2px 6px", borderRadius: "3px"
  });

  var proto = location.protocol === "https:" ? "wss:" : "ws:";
  var ws = new WebSocket(proto + "//" + location.host + location.pathname.replace(/\/$/, "") + "/ws" + location.search);
  ws.binaryType = "blob";
  var pending = null, busy = false;

  function setStatus(s) { status.textContent = s; status.style.display = s ? "block" : "none"; }

  function fit() {
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(canvas.clientWidth * dpr);
    canvas.height = Math.round(canvas.clientHeight * dpr);
  }

  function draw(bitmap) {
    if (canvas.width !== Math.round(canvas.clientWidth * (window.devicePixelRatio || 1))) fit();
    var s = Math.min(canvas.width / bitmap.width, canvas.height / bitmap.height);
    var w = bitmap.width * s, h = bitmap.height * s;
    var x = (canvas.width - w) / 2, y = (canvas.height - h) / 2;
    g.fillStyle = "#111";
    g.fillRect(0, 0, canvas.width, canvas.height);
    g.drawImage(bitmap, x, y, w, h);
    var dpr = window.devicePixelRatio || 1;
    drawn = { x: x / dpr, y: y / dpr, w: w / dpr, h: h / dpr };
    if (bitmap.close) bitmap.close();
  }

  // Only the newest frame is decoded; older ones waiting are dropped.
  function next() {
    if (busy || !pending) return;
    var blob = pending;
    pending = null;
    busy = true;
    createImageBitmap(blob).then(draw, function () {}).then(function () { busy = false; next(); });
  }

  ws.onopen = function () { setStatus(viewOnly ? "View only" : ""); };
  ws.onmessage = function (ev) {
    if (typeof ev.data === "string") {
      var m = JSON.parse(ev.data);
      if (m.type === "meta") { page.width = m.width; page.height = m.height; }
      if (m.type === "mode") { viewOnly = m.viewOnly; setStatus(viewOnly ? "View only" : ""); }
      return;
    }
    pending = new Blob([ev.data], { type: "image/jpeg" });
    next();
  };
  ws.onclose = function () { setStatus("The session has ended"); };

  function send(m) { if (!viewOnly && ws.readyState === 1) ws.send(JSON.stringify(m)); }

  function mods(e) { return (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0); }

  function at(e) {
    var r = canvas.getBoundingClientRect();
    var pw = page.width || drawn.w, ph = page.height || drawn.h;
    return { x: (e.clientX - r.left - drawn.x) * pw / drawn.w, y: (e.clientY - r.top - drawn.y) * ph / drawn.h };
  }

  var buttons = ["left", "middle", "right", "back", "forward"];
  function mouse(type, e) {
    var p = at(e);
    send({ t: "mouse", type: type, x: p.x, y: p.y, button: type === "mouseMoved" ? "none" : (buttons[e.button] || "none"),
      buttons: e.buttons, clickCount: type === "mouseMoved" ? 0 : (e.detail || 1), modifiers: mods(e) });
  }
  var moveQueued = null;
  canvas.addEventListener("mousedown", function (e) { canvas.focus(); e.preventDefault(); mouse("mousePressed", e); });
  canvas.addEventListener("mouseup", function (e) { e.preventDefault(); mouse("mouseReleased", e); });
  canvas.addEventListener("mousemove", function (e) {
    if (moveQueued) { moveQueued = e; return; }
    moveQueued = e;
    requestAnimationFrame(function () { mouse("mouseMoved", moveQueued); moveQueued = null; });
  });
  canvas.addEventListener("contextmenu", function (e) { e.preventDefault(); });
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    var p = at(e), k = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    send({ t: "wheel", x: p.x, y: p.y, dx: e.deltaX * k, dy: e.deltaY * k, modifiers: mods(e) });
  }, { passive: false });

  function key(type, e) {
    var text = "";
    if (type === "keyDown") {
      if (e.key.length === 1 && !e.ctrlKey && !e.metaKey) text = e.key;
      else if (e.key === "Enter") text = "\r";
    }
    send({ t: "key", type: text || type === "keyUp" ? type : "rawKeyDown", key: e.key, code: e.code, text: text,
      keyCode: e.keyCode || 0, modifiers: mods(e) });
  }
  canvas.addEventListener("keydown", function (e) { e.preventDefault(); key("keyDown", e); });
  canvas.addEventListener("keyup", function (e) { e.preventDefault(); key("keyUp", e); });

  // The page follows the viewer's size only when the viewer resizes, so
  // merely watching does not change the viewport an automation set.
  var resizeTimer = 0;
  window.addEventListener("resize", function () {
    fit();
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      send({ t: "resize", width: Math.round(canvas.clientWidth), height: Math.round(canvas.clientHeight) });
    }, 200);
  });
  fit();
})();
