// What every console page shares: building elements from data (always as text, never as markup),
// calling the API with the console's cookie, formatting money and times, icons, the status line (whose
// errors stay until dismissed). The header's live counts, notifications and shortcuts are shell.js.
"use strict";

window.Mainsail = (function () {
  // Control characters and bidirectional overrides shown as escapes: a command must read as it runs.
  const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

  function visible(text) {
    return String(text).replace(HIDDEN, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  }

  // <tag class=cls>text</tag>; text goes in with textContent, so model output stays text.
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // A unified diff (lines starting "+", "-", "@@", "---"/"+++", " ") as a <pre class="diff">, each line
  // coloured by its mark, then its note (cut, or why no diff is shown). The server makes the diffs
  // (workflows/edits/preview.py); this only shows them.
  function diff(text, note) {
    const pre = el("pre", "diff");
    const lines = text ? String(text).split("\n") : [];
    const headed = lines.length > 1 && lines[0].startsWith("--- ") && lines[1].startsWith("+++ ");
    lines.forEach((line, i) => {
      const cls = headed && i < 2 ? "file" : line[0] === "+" ? "add" : line[0] === "-" ? "del"
        : line.startsWith("@@") ? "hunk" : "ctx";
      pre.append(el("span", cls, visible(line) + "\n"));
    });
    if (note) pre.append(el("span", "note", "(" + note + ")\n"));
    return pre;
  }

  function money(usd) {
    return usd === null || usd === undefined ? "?" : "$" + Number(usd).toFixed(4);
  }

  function ago(ts) {
    let secs = Math.max(0, Math.floor(Date.now() / 1000 - ts));
    for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
      if (secs >= size) return Math.floor(secs / size) + unit + " ago";
    }
    return secs + "s ago";
  }

  // The status line under the header. A message replaces the one before it and "" clears it, but not an
  // error: that stays (whatever a page's refresh clears) until the person dismisses it or a newer message
  // (the outcome of something done since) replaces it.
  function status(text, isError) {
    const line = document.getElementById("status");
    if (!line) return;
    if (!text && line.classList.contains("error")) return;
    show(line, text, isError);
  }

  function show(line, text, isError) {
    const words = document.getElementById("status-text") || line;
    words.textContent = text || "";
    line.classList.toggle("error", Boolean(isError && text));
    line.setAttribute("role", isError && text ? "alert" : "status");
    const dismiss = document.getElementById("status-dismiss");
    if (dismiss) dismiss.hidden = !(isError && text);
  }

  function dismissStatus() {
    const line = document.getElementById("status");
    if (line) show(line, "", false);
  }

  // <svg class=icon><use href="#i-NAME"></svg>: an icon of the page's sprite (templates/sprite.html).
  function icon(name, cls) {
    const NS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("class", cls || "icon");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    const use = document.createElementNS(NS, "use");
    use.setAttribute("href", "#i-" + name);
    svg.append(use);
    return svg;
  }

  function signIn() {
    window.location.assign("/signin?next=" + encodeURIComponent(window.location.pathname));
  }

  // Call the API with the cookie; a change carries X-Mainsail-Console (the API refuses it without).
  async function api(method, path, body) {
    const init = { method: method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "GET") {
      init.headers["X-Mainsail-Console"] = "1";
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body || {});
    }
    const response = await fetch(path, init);
    if (response.status === 401) {
      signIn();
      throw new Error("Signed out: the token is no longer valid.");
    }
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      const detail = data && typeof data.detail === "string" ? data.detail : response.status + " " + response.statusText;
      throw new Error(detail);
    }
    return data;
  }

  // Run fn now and then every `ms`, never two at once; failures go to the status line.
  function every(ms, fn) {
    let busy = false;
    async function tick() {
      if (busy) return;
      busy = true;
      try { await fn(); } catch (e) { status(e.message, true); } finally { busy = false; }
    }
    window.setInterval(tick, ms);
    return tick;
  }

  document.addEventListener("DOMContentLoaded", () => {
    const dismiss = document.getElementById("status-dismiss");
    if (dismiss) dismiss.addEventListener("click", dismissStatus);
  });

  return { visible, el, icon, diff, money, ago, status, dismissStatus, api, every, signIn };
})();
