// The sessions list: searched and filtered as the page's query says (the URL is the shareable view: a
// change of the search box or a filter rewrites it), refreshed from /api/sessions every few seconds, the
// times kept live each second. j / k move the selection, Enter opens it, / goes to the search box; a
// session's short id copies the whole id. Everything from the API is written as text.
"use strict";

(function () {
  const M = window.Mainsail;
  const icon = M.icon;
  const FILTERS = ["q", "state", "workspace", "token", "schedule"];
  const rows = document.getElementById("rows");
  const empty = document.getElementById("empty");
  const count = document.getElementById("count");
  const form = document.getElementById("filters");
  let selected = null;  // the id of the selected row

  function cell(cls, ...children) {
    const td = M.el("td", cls);
    td.append(...children);
    return td;
  }

  function row(s) {
    const tr = M.el("tr");
    tr.dataset.id = s.id;
    const state = M.el("span", "state state-" + s.state);
    state.append(icon(s.state), s.state);
    const st = cell("st", state);
    if (s.pending) st.append(" ", M.el("span", "badge", s.pending + " waiting"));
    const copy = M.el("button", "copy");
    copy.type = "button";
    copy.dataset.copy = s.id;
    copy.title = "Copy the id " + s.id;
    copy.append(M.el("code", null, s.id.slice(0, 8)), icon("copy"));
    const link = M.el("a", null, s.title || s.id.slice(0, 8));
    link.href = "/sessions/" + encodeURIComponent(s.id);
    const path = M.el("td", "path", s.workspace);
    path.title = s.workspace;
    const time = M.el("time", null, M.ago(s.updated_at));
    time.dataset.ts = s.updated_at;
    tr.append(st, cell("sid", copy), cell("title", link), path, M.el("td", "model", s.model),
              M.el("td", "num turns", s.turns), M.el("td", "num cost", M.money(s.cost_usd)), cell("when", time));
    if (s.id === selected) tr.classList.add("selected");
    return tr;
  }

  // The filters as the URL query has them ("" for each one not given).
  function current() {
    const params = new URLSearchParams(window.location.search);
    return Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || ""]));
  }

  let asked = 0;  // the newest read: an older answer arriving after it (other filters) is dropped
  async function refresh() {
    const mine = ++asked;
    const query = new URLSearchParams({ limit: "200" });
    for (const [k, v] of Object.entries(current())) if (v.trim()) query.set(k, v.trim());
    let sessions;
    try {
      sessions = await M.api("GET", "/api/sessions?" + query.toString());
    } catch (e) {  // a schedule this token does not see: nothing to list, and why
      if (mine !== asked) return;
      rows.replaceChildren();
      empty.textContent = e.message;
      empty.hidden = false;
      count.textContent = "0 shown";
      return;
    }
    if (mine !== asked) return;
    rows.replaceChildren(...sessions.map(row));
    const f = current();
    const others = ["q", "workspace", "token", "schedule"].some((k) => f[k].trim());
    empty.textContent = "No sessions" + (f.state ? " in state " + f.state : "") +
      (others ? " match the search and filters" : "") + ".";
    empty.hidden = sessions.length > 0;
    count.textContent = sessions.length + " shown";
    M.status("");
  }

  // The form's values into the URL (replacing this history entry: typing is not navigation), then the list.
  function apply() {
    const params = new URLSearchParams();
    for (const k of FILTERS) {
      const v = (form.elements[k].value || "").trim();
      if (v) params.set(k, v);
    }
    const qs = params.toString();
    window.history.replaceState(null, "", "/" + (qs ? "?" + qs : ""));
    return refresh().catch((e) => M.status(e.message, true));
  }

  function select(tr) {
    for (const old of rows.querySelectorAll("tr.selected")) old.classList.remove("selected");
    if (!tr) return;
    tr.classList.add("selected");
    selected = tr.dataset.id;
    tr.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    const all = Array.from(rows.children);
    if (!all.length) return;
    const at = all.findIndex((tr) => tr.dataset.id === selected);
    const next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    select(all[next]);
  }

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || (M.keysBusy && M.keysBusy())) return;
    const typing = ev.target.closest && ev.target.closest("input, textarea, select, [contenteditable]");
    if (typing) {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    if (ev.key === "j") move(1);
    else if (ev.key === "k") move(-1);
    else if (ev.key === "/") {
      ev.preventDefault();
      form.elements.q.focus();
    } else if (ev.key === "Enter" && selected && !ev.target.closest("a, button, summary")) {
      const link = rows.querySelector("tr.selected td.title a");
      if (link) window.location.assign(link.href);
    } else return;
    ev.preventDefault();
  });

  rows.addEventListener("click", async (ev) => {
    const button = ev.target.closest("button.copy");
    if (!button) return;
    try {
      await navigator.clipboard.writeText(button.dataset.copy);
      M.status("Copied the session id " + button.dataset.copy + ".");
    } catch (e) {  // no clipboard (a page not served over https or localhost): select it to copy by hand
      window.getSelection().selectAllChildren(button.querySelector("code"));
      M.status("Copy this id by hand: " + button.dataset.copy, true);
    }
  });

  let typed = null;
  form.elements.q.addEventListener("input", () => {
    window.clearTimeout(typed);
    typed = window.setTimeout(apply, 250);
  });
  for (const k of FILTERS.slice(1)) form.elements[k].addEventListener("change", apply);
  form.addEventListener("submit", (ev) => { ev.preventDefault(); apply(); });
  document.getElementById("apply").hidden = true;  // (without this script, the button submits the form)

  // The "last activity" times, each second, between two reads of the list.
  window.setInterval(() => {
    for (const t of rows.querySelectorAll("time[data-ts]")) t.textContent = M.ago(Number(t.dataset.ts));
  }, 1000);

  // New session: POST /api/sessions as `mainsail submit` would, then its page.
  const start = document.getElementById("new-session-form");
  if (start) {
    start.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const data = new FormData(start);
      const body = { workspace: data.get("workspace").trim(), prompt: data.get("prompt") };
      for (const key of ["permission_mode", "model"]) {
        const value = (data.get(key) || "").trim();
        if (value) body[key] = value;
      }
      const button = start.querySelector("button[type=submit]");
      button.disabled = true;
      M.status("Starting the session…");
      try {
        const created = await M.api("POST", "/api/sessions", body);
        window.location.assign("/sessions/" + encodeURIComponent(created.id));
      } catch (e) {
        M.status(e.message, true);
        button.disabled = false;
      }
    });
  }

  M.every(3000, refresh);
})();
