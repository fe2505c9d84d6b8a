/* Tandem's page behaviour: resync on (re)connect, the connection indicator, the composer
   keys, elapsed timers and scrolling. No inline handlers: CSP allows only nonce'd scripts. */
(function () {
  "use strict";

  function cursor() {
    var el = document.getElementById("sync-cursor");
    return el ? { seq: Number(el.dataset.seq || 0), rev: Number(el.dataset.rev || 0) } : null;
  }

  function setConnection(state, text) {
    var el = document.getElementById("connection");
    if (!el) return;
    el.dataset.state = state;
    el.textContent = text;
  }

  function nearBottom() {
    var doc = document.scrollingElement || document.documentElement;
    return doc.scrollHeight - doc.scrollTop - window.innerHeight < 160;
  }

  var stick = true;

  document.addEventListener("htmx:wsOpen", function (evt) {
    setConnection("open", "Connected");
    var c = cursor();
    if (c) {
      evt.detail.socketWrapper.send(JSON.stringify({ type: "sync", seq: c.seq, rev: c.rev }));
    }
  });

  document.addEventListener("htmx:wsClose", function () {
    setConnection("closed", "Reconnecting…");
  });

  document.addEventListener("htmx:wsError", function () {
    setConnection("closed", "Reconnecting…");
  });

  document.addEventListener("htmx:wsBeforeMessage", function () {
    stick = nearBottom();
  });

  document.addEventListener("htmx:wsAfterMessage", function () {
    if (stick) window.scrollTo(0, document.body.scrollHeight);
  });

  document.addEventListener("htmx:wsAfterSend", function (evt) {
    var form = evt.target && evt.target.closest ? evt.target.closest("#composer") : null;
    if (form) {
      var box = form.querySelector("textarea");
      box.value = "";
      box.focus();
      window.scrollTo(0, document.body.scrollHeight);
    }
  });

  document.addEventListener("keydown", function (evt) {
    var box = evt.target;
    if (!box || box.id !== "message-input") return;
    if (evt.key === "Enter" && !evt.shiftKey && !evt.isComposing) {
      evt.preventDefault();
      if (box.value.trim()) box.form.requestSubmit();
    }
  });

  function tick() {
    var now = Date.now();
    document.querySelectorAll(".elapsed[data-started]").forEach(function (el) {
      var started = Date.parse(el.dataset.started);
      if (!isNaN(started)) {
        var s = Math.max(0, Math.round((now - started) / 1000));
        el.textContent = s < 60 ? s + " s" : Math.floor(s / 60) + " min " + (s % 60) + " s";
      }
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", function () {
    tick();
    window.scrollTo(0, document.body.scrollHeight);
  });
})();
