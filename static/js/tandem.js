/* Tandem's page behaviour: resync on (re)connect, the connection indicator and reconnect
   backoff, the composer keys, keeping focus and open sections across live swaps, elapsed
   timers and scrolling. No inline handlers: the CSP allows only nonce'd scripts. */
(function () {
  "use strict";

  var RECONNECT_CODES = [1006, 1011, 1012, 1013]; // the ws extension retries only these
  var OFFLINE_TEXT = "Not connected: Tandem is reconnecting. Nothing was sent; try again in a moment.";
  var GONE_TEXT = {
    4403: "Signed out.",
    4404: "This conversation no longer exists",
    4429: "Too many open Tandem tabs: close some, then reload this one",
  };
  var SIGNED_OUT = 4403;

  // Capped exponential backoff with jitter: 0.25-0.5 s, 0.5-1 s, ... at most 5-10 s, so a
  // server that comes back is found within seconds (the default grows to a minute).
  function backoff(retries) {
    var ceiling = Math.min(10000, 500 * Math.pow(2, retries));
    return ceiling / 2 + (Math.random() * ceiling) / 2;
  }
  if (window.htmx) htmx.config.wsReconnectDelay = backoff;

  function cursor() {
    var el = document.getElementById("sync-cursor");
    return el ? { seq: Number(el.dataset.seq || 0), rev: Number(el.dataset.rev || 0) } : null;
  }

  function syncFrame() {
    var c = cursor() || { seq: 0, rev: 0 };
    return JSON.stringify({ type: "sync", seq: c.seq, rev: c.rev });
  }

  // --- connection state: one entry per socket on the page (the chat and the list) ---------

  var sockets = new Map(); // ws-connect element -> { state, opened, wrapper, gone }

  function entry(elt) {
    var e = sockets.get(elt);
    if (!e) {
      e = { state: "connecting", opened: false, wrapper: null, gone: "", code: 0, cleanCloses: 0 };
      sockets.set(elt, e);
    }
    return e;
  }

  var RANK = { open: 0, connecting: 1, closed: 2, gone: 3 };

  function render() {
    var el = document.getElementById("connection");
    if (!el) return;
    var state = "open";
    var text = "Connected";
    var signedOut = false;
    sockets.forEach(function (e) {
      var s = e.state === "gone" || e.state === "open" ? e.state : e.opened ? "closed" : "connecting";
      if (RANK[s] > RANK[state]) {
        state = s;
        text = s === "gone" ? e.gone : s === "closed" ? "Reconnecting…" : "Connecting…";
        signedOut = s === "gone" && e.code === SIGNED_OUT;
      }
    });
    if (el.dataset.state !== state || el.dataset.text !== text) {
      el.dataset.state = state;
      el.dataset.text = text;
      el.textContent = text;
      if (signedOut && el.dataset.login) {
        var link = document.createElement("a");
        link.href = el.dataset.login + "?next=" + encodeURIComponent(location.pathname);
        link.textContent = "Log in again";
        el.append(" ", link);
      }
    }
  }

  function isOpen(elt) {
    var e = elt && sockets.get(elt);
    return !!e && e.state === "open";
  }

  document.addEventListener("htmx:wsConnecting", function (evt) {
    entry(evt.target).state = "connecting";
    render();
  });

  document.addEventListener("htmx:wsOpen", function (evt) {
    var e = entry(evt.target);
    e.state = "open";
    e.opened = true;
    e.cleanCloses = 0;
    e.wrapper = evt.detail.socketWrapper;
    render();
    var error = document.getElementById("composer-error");
    if (error && error.textContent === OFFLINE_TEXT) error.textContent = "";
    // Ask for exactly what this page lacks (the list socket answers with the whole list).
    e.wrapper.send(syncFrame());
  });

  var leaving = false;
  window.addEventListener("pagehide", function () {
    leaving = true;
  });

  document.addEventListener("htmx:wsClose", function (evt) {
    var e = entry(evt.target);
    var code = evt.detail && evt.detail.event ? evt.detail.event.code : 1006;
    var wrapper = evt.detail ? evt.detail.socketWrapper : null;
    if (leaving) return;
    if (RECONNECT_CODES.indexOf(code) >= 0) {
      e.state = "closed"; // the ws extension retries these with our backoff
    } else if ((code === 1000 || code === 1001) && wrapper) {
      // A clean close by the server or a proxy (a restart, a connection time limit): the
      // extension gives up on these, the page should not.
      e.state = "closed";
      setTimeout(function () {
        if (!leaving) wrapper.reconnect();
      }, backoff(e.cleanCloses++));
    } else {
      // Signed out, deleted, too many tabs: retrying cannot help, so the page says why.
      e.state = "gone";
      e.code = code;
      e.gone = GONE_TEXT[code] || "Disconnected: reload the page";
    }
    pending = null; // an answer can no longer come
    render();
  });

  // A tab that wakes up or comes back online asks again: frames it missed while the
  // machine slept are filled from the database. A dead socket fails and reconnects.
  function resyncAll() {
    sockets.forEach(function (e) {
      if (e.state === "open" && e.wrapper) e.wrapper.send(syncFrame());
    });
  }
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") resyncAll();
  });
  window.addEventListener("online", resyncAll);

  // Nothing is queued behind a closed socket: the text stays in the box, said plainly.
  // A message sent from the composer carries a ref; the box is cleared only when the server
  // answers that it stored the message with that ref (a refusal leaves the text to fix).
  var pending = null; // { ref, text } of the composer's send awaiting its answer
  var sends = 0;

  function cancelSend(evt) {
    evt.preventDefault();
    if (evt.detail.triggeringEvent) evt.detail.triggeringEvent.preventDefault();
  }

  document.addEventListener("htmx:wsConfigSend", function (evt) {
    var socketElt = evt.target.closest("[ws-connect]");
    if (!isOpen(socketElt)) {
      cancelSend(evt);
      var error = document.getElementById("composer-error");
      if (error) error.textContent = OFFLINE_TEXT;
      return;
    }
    if (evt.target.id !== "composer") return;
    var text = evt.detail.parameters.text;
    if (pending && pending.text === text) {
      cancelSend(evt); // the same text is on its way already (a double Enter)
      return;
    }
    pending = { ref: "s" + ++sends, text: text };
    evt.detail.parameters.ref = pending.ref;
  });

  function answerPending(message) {
    if (!pending || message.indexOf('id="composer-error"') < 0) return;
    var line = document.getElementById("composer-error");
    if (!line) return;
    if (line.dataset.stored === pending.ref) {
      var box = document.getElementById("message-input");
      if (box && box.value === pending.text) {
        box.value = "";
        fit(box);
      }
      pending = null;
      window.scrollTo(0, document.body.scrollHeight);
    } else if (line.textContent) {
      pending = null; // refused: the text stays in the box beside the reason
    }
  }

  // --- live swaps: keep the reader's place, focus and open sections ---------------------

  var stick = true;
  var focused = null;
  var userOpen = {}; // details id -> open, for sections the reader toggled

  function nearBottom() {
    var doc = document.scrollingElement || document.documentElement;
    return doc.scrollHeight - doc.scrollTop - window.innerHeight < 160;
  }

  function focusables(root) {
    return Array.prototype.slice.call(
      root.querySelectorAll("button, summary, a[href], textarea, input:not([type=hidden])")
    );
  }

  function focusKey() {
    var el = document.activeElement;
    if (!el || el === document.body) return null;
    var host = el.parentElement ? el.parentElement.closest("[id]") : null;
    if (!host) return null;
    return { el: el, host: host.id, tag: el.tagName, cls: el.className, text: el.textContent };
  }

  function restoreFocus(key) {
    if (!key || document.contains(key.el)) return;
    var active = document.activeElement;
    if (active && active !== document.body) return; // the reader has moved on
    var host = document.getElementById(key.host);
    var match = null;
    if (host) {
      focusables(host).forEach(function (el) {
        if (!match && el.tagName === key.tag && el.className === key.cls && el.textContent === key.text) {
          match = el;
        }
      });
    }
    // The control is gone (a Stop after the reply ended, a Cancel after the tool stopped):
    // the next useful place is the composer (not on a touch tap: that pops the keyboard up).
    if (!match && (byKeyboard || window.matchMedia("(pointer: fine)").matches)) {
      match = document.getElementById("message-input");
    }
    if (match) match.focus({ preventScroll: true });
  }

  var byKeyboard = false; // how the reader last moved: keys or pointer
  document.addEventListener("keydown", function () { byKeyboard = true; }, true);
  document.addEventListener("pointerdown", function () { byKeyboard = false; }, true);

  document.addEventListener("click", function (evt) {
    var summary = evt.target.closest ? evt.target.closest("summary") : null;
    var details = summary ? summary.parentElement : null;
    if (details && details.tagName === "DETAILS" && details.id) {
      userOpen[details.id] = !details.open; // the click is about to toggle it
    }
  });

  function restoreOpen() {
    Object.keys(userOpen).forEach(function (id) {
      var el = document.getElementById(id);
      if (el && el.open !== userOpen[id]) el.open = userOpen[id];
    });
  }

  document.addEventListener("htmx:wsBeforeMessage", function () {
    stick = nearBottom();
    focused = focusKey();
  });

  document.addEventListener("htmx:wsAfterMessage", function (evt) {
    answerPending(String(evt.detail.message || ""));
    addCopyButtons();
    restoreOpen();
    restoreFocus(focused);
    focused = null;
    tick();
    if (stick) window.scrollTo(0, document.body.scrollHeight);
  });

  // --- a Copy button on each code block of a reply (added here: Markdown carries no markup
  // of ours, and the CSP allows no inline handler) -----------------------------------------

  function addCopyButtons() {
    document.querySelectorAll(".msg .markdown pre:not([data-copy])").forEach(function (pre) {
      pre.dataset.copy = "";
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy code");
      pre.prepend(button);
    });
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    var box = document.createElement("textarea");
    box.value = text;
    box.setAttribute("readonly", "");
    box.style.position = "fixed";
    box.style.opacity = "0";
    document.body.append(box);
    box.select();
    var ok = document.execCommand("copy");
    box.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  document.addEventListener("click", function (evt) {
    var button = evt.target.closest ? evt.target.closest("button.copy-code") : null;
    if (!button) return;
    var code = button.parentElement.querySelector("code") || button.parentElement;
    copyText(code.textContent).then(
      function () { button.textContent = "Copied"; },
      function () { button.textContent = "Copy failed"; }
    );
    setTimeout(function () { button.textContent = "Copy"; }, 1500);
  });

  document.addEventListener("htmx:afterSettle", addCopyButtons);

  // --- the composer: Enter sends, Shift+Enter breaks the line, the box grows -------------

  function fit(box) {
    box.style.height = "auto";
    box.style.height = box.scrollHeight + 2 + "px";
  }

  document.addEventListener("htmx:wsAfterSend", function (evt) {
    var form = evt.target && evt.target.closest ? evt.target.closest("#composer") : null;
    if (form) form.querySelector("textarea").focus(); // cleared once the server stored it
  });

  document.addEventListener("keydown", function (evt) {
    var box = evt.target;
    if (!box || box.id !== "message-input") return;
    if (evt.key === "Enter" && !evt.shiftKey && !evt.isComposing) {
      evt.preventDefault();
      if (box.value.trim()) box.form.requestSubmit();
    }
  });

  document.addEventListener("input", function (evt) {
    if (evt.target && evt.target.id === "message-input") fit(evt.target);
  });

  // --- elapsed time of running tools ------------------------------------------------------

  function tick() {
    var now = Date.now();
    document.querySelectorAll(".elapsed[data-started]").forEach(function (el) {
      var started = Date.parse(el.dataset.started);
      if (!isNaN(started)) {
        var s = Math.max(0, Math.round((now - started) / 1000));
        var text = s < 60 ? s + " s" : Math.floor(s / 60) + " min " + (s % 60) + " s";
        if (el.textContent !== text) el.textContent = text;
      }
    });
  }
  setInterval(tick, 1000);

  document.addEventListener("DOMContentLoaded", function () {
    tick();
    addCopyButtons();
    window.scrollTo(0, document.body.scrollHeight);
    // Ready to type on a desktop; on a touch screen this would pop the keyboard up.
    var box = document.getElementById("message-input");
    var idle = !document.activeElement || document.activeElement === document.body;
    if (box && idle && !location.hash && window.matchMedia("(pointer: fine)").matches) {
      box.focus({ preventScroll: true });
    }
  });
})();
