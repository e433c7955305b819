// The approvals inbox: each request with its diff (an edit's), Approve / Always (only where the server
// says it is offered) / Deny (with a message) through the API; the list refreshes
// every few seconds, keeping the items still pending (and what was typed into them) in place.
"use strict";

(function () {
  const M = window.Mainsail;
  const list = document.getElementById("requests");
  const empty = document.getElementById("empty");

  function item(p) {
    const li = M.el("li", "request");
    li.dataset.session = p.session_id;
    li.dataset.request = p.request.id;
    const where = M.el("div", "where");
    const link = M.el("a", null, p.session_title || p.session_id.slice(0, 8));
    link.href = "/sessions/" + encodeURIComponent(p.session_id);
    where.append(link, " ", M.el("span", "path", p.workspace));
    if (p.agent_type) where.append(" ", M.el("span", "badge", "sub-agent " + p.agent_type));
    const actions = M.el("div", "actions");
    const message = M.el("input", "deny-message");
    message.type = "text";
    message.placeholder = "Why not, or what to do instead";
    actions.append(M.el("button", "approve", "Approve"), " ");
    if (p.always_offered) actions.append(M.el("button", "always", "Always"), " ");  // as the server says
    actions.append(message, " ", M.el("button", "deny danger", "Deny"));
    for (const b of actions.querySelectorAll("button")) b.type = "button";
    li.append(where, M.el("pre", "prompt", p.prompt));
    if (p.request.diff || p.request.diff_note) li.append(M.diff(p.request.diff, p.request.diff_note));
    li.append(actions);
    return li;
  }

  async function refresh() {
    const pending = await M.api("GET", "/api/approvals");
    const wanted = new Set(pending.map((p) => p.request.id));
    for (const li of Array.from(list.children)) {
      if (!wanted.has(li.dataset.request)) li.remove();
    }
    const shown = new Set(Array.from(list.children).map((li) => li.dataset.request));
    for (const p of pending) {
      if (!shown.has(p.request.id)) list.append(item(p));
    }
    empty.hidden = pending.length > 0;
  }

  async function decide(li, verb, body) {
    const path = "/api/sessions/" + encodeURIComponent(li.dataset.session) + "/" + verb;
    for (const b of li.querySelectorAll("button")) b.disabled = true;
    try {
      const done = await M.api("POST", path, Object.assign({ request: li.dataset.request }, body));
      const added = done.rules_added.length ? "; always allowed now: " + done.rules_added.join(", ") : "";
      M.status((done.approved ? "Approved " : "Denied ") + done.tool + ": " + done.summary + added + ".");
      li.remove();
    } catch (e) {
      M.status(e.message, true);
      for (const b of li.querySelectorAll("button")) b.disabled = false;
    }
    await refresh();
  }

  // The page's own items: their diffs coloured as refresh() colours the ones it adds.
  for (const pre of list.querySelectorAll("pre.diff[data-diff]")) {
    pre.replaceWith(M.diff(pre.dataset.diff, pre.dataset.note));
  }

  list.addEventListener("click", (ev) => {
    const button = ev.target.closest("button");
    const li = ev.target.closest("li.request");
    if (!button || !li) return;
    if (button.classList.contains("approve")) decide(li, "approve", { always: false });
    else if (button.classList.contains("always")) decide(li, "approve", { always: true });
    else if (button.classList.contains("deny")) {
      const message = li.querySelector(".deny-message").value.trim();
      decide(li, "deny", message ? { message: message } : {});
    }
  });

  M.every(3000, refresh);
})();
