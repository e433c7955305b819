// The sessions table: refreshed from /api/sessions every few seconds.
"use strict";

(function () {
  const M = window.Mainsail;
  const page = document.getElementById("sessions-page");
  const rows = document.getElementById("rows");
  const empty = document.getElementById("empty");
  const state = page.dataset.state;

  function row(s) {
    const tr = M.el("tr");
    tr.dataset.id = s.id;
    const st = M.el("td");
    st.append(M.el("span", "state state-" + s.state, s.state));
    if (s.pending) st.append(" ", M.el("span", "badge", s.pending + " waiting"));
    const title = M.el("td");
    const link = M.el("a", null, s.title || s.id.slice(0, 8));
    link.href = "/sessions/" + encodeURIComponent(s.id);
    title.append(link);
    tr.append(st, title, M.el("td", "path", s.workspace), M.el("td", null, s.model), M.el("td", "num", s.turns),
              M.el("td", "num", M.money(s.cost_usd)), M.el("td", null, M.ago(s.updated_at)));
    return tr;
  }

  async function refresh() {
    const query = "?limit=200" + (state ? "&state=" + encodeURIComponent(state) : "");
    const sessions = await M.api("GET", "/api/sessions" + query);
    rows.replaceChildren(...sessions.map(row));
    empty.hidden = sessions.length > 0;
    M.status("");
  }

  // New session: POST /api/sessions as `mainsail submit` would, then its page.
  const form = document.getElementById("new-session-form");
  if (form) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const data = new FormData(form);
      const body = { workspace: data.get("workspace").trim(), prompt: data.get("prompt") };
      for (const key of ["permission_mode", "model"]) {
        const value = (data.get(key) || "").trim();
        if (value) body[key] = value;
      }
      const button = form.querySelector("button[type=submit]");
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
  document.getElementById("state").addEventListener("change", (ev) => ev.target.form.submit());
})();
