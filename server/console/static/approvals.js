// The approvals inbox: each request with its diff (an edit's), Approve / Always (only where the server
// says it is offered) / Deny (with a message) through the API, none of them for a read-only token; the list
// refreshes every few seconds, keeping the items still pending (and what was typed into them) in place.
// Keys: j/k select the next/previous request, a approves it, d denies it, o opens its session.
"use strict";

(function () {
  const M = window.Mainsail;
  const list = document.getElementById("requests");
  const empty = document.getElementById("empty");
  const readOnly = document.body.dataset.readOnly === "1";

  function button(cls, iconName, text) {
    const b = M.el("button", cls);
    b.type = "button";
    if (iconName) b.append(M.icon(iconName));
    b.append(text);
    return b;
  }

  function item(p) {
    const li = M.el("li", "request");
    li.tabIndex = -1;
    li.dataset.session = p.session_id;
    li.dataset.request = p.request.id;
    const where = M.el("div", "where");
    const link = M.el("a", null, p.session_title || p.session_id.slice(0, 8));
    link.href = "/sessions/" + encodeURIComponent(p.session_id);
    where.append(M.el("span", "tool-name", p.request.tool), " ", link, " ", M.el("span", "path", p.workspace));
    if (p.agent_type) where.append(" ", M.el("span", "badge", "sub-agent " + p.agent_type));
    li.append(where, M.el("pre", "prompt", p.prompt));
    if (p.request.diff || p.request.diff_note) li.append(M.diff(p.request.diff, p.request.diff_note));
    if (readOnly) return li;
    const actions = M.el("div", "actions");
    const message = M.el("input", "deny-message");
    message.type = "text";
    message.placeholder = "Why not, or what to do instead";
    message.setAttribute("aria-label", "Message to the model when denying");
    actions.append(button("approve primary", "check", "Approve"));
    if (p.always_offered) actions.append(button("always", null, "Always"));  // as the server says
    actions.append(message, button("deny danger", "ban", "Deny"));
    li.append(actions);
    return li;
  }

  const items = () => Array.from(list.querySelectorAll("li.request"));
  const selected = () => list.querySelector("li.request.selected");

  function select(li) {
    for (const other of items()) {
      other.classList.toggle("selected", other === li);
      if (other === li) other.setAttribute("aria-current", "true"); else other.removeAttribute("aria-current");
    }
    if (li) {
      li.focus({ preventScroll: true });
      li.scrollIntoView({ block: "nearest" });
    }
  }

  function move(step) {
    const all = items();
    if (!all.length) return;
    const at = all.indexOf(selected());
    select(all[at < 0 ? 0 : Math.min(all.length - 1, Math.max(0, at + step))]);
  }

  async function refresh() {
    const pending = await M.api("GET", "/api/approvals");
    const wanted = new Set(pending.map((p) => p.request.id));
    for (const li of items()) {
      if (!wanted.has(li.dataset.request)) li.remove();
    }
    const shown = new Set(items().map((li) => li.dataset.request));
    for (const p of pending) {
      if (!shown.has(p.request.id)) list.append(item(p));
    }
    empty.hidden = pending.length > 0;
    if (!selected() && items().length) select(items()[0]);
  }

  async function decide(li, verb, body) {
    const path = "/api/sessions/" + encodeURIComponent(li.dataset.session) + "/" + verb;
    for (const b of li.querySelectorAll("button")) b.disabled = true;
    const next = li.nextElementSibling || li.previousElementSibling;
    try {
      const done = await M.api("POST", path, Object.assign({ request: li.dataset.request }, body));
      const added = done.rules_added.length ? "; always allowed now: " + done.rules_added.join(", ") : "";
      M.status((done.approved ? "Approved " : "Denied ") + done.tool + ": " + done.summary + added + ".");
      li.remove();
      if (next && next.isConnected) select(next);
    } catch (e) {
      M.status(e.message, true);
      for (const b of li.querySelectorAll("button")) b.disabled = false;
    }
    await refresh();
  }

  function deny(li) {
    const message = li.querySelector(".deny-message").value.trim();
    decide(li, "deny", message ? { message: message } : {});
  }

  // The page's own items: their diffs coloured as refresh() colours the ones it adds.
  for (const pre of list.querySelectorAll("pre.diff[data-diff]")) {
    pre.replaceWith(M.diff(pre.dataset.diff, pre.dataset.note));
  }

  list.addEventListener("click", (ev) => {
    const li = ev.target.closest("li.request");
    if (!li) return;
    if (!li.classList.contains("selected") && !ev.target.closest("a, input")) select(li);
    const b = ev.target.closest("button");
    if (!b) return;
    if (b.classList.contains("approve")) decide(li, "approve", { always: false });
    else if (b.classList.contains("always")) decide(li, "approve", { always: true });
    else if (b.classList.contains("deny")) deny(li);
  });

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || M.keysBusy()) return;
    if (ev.target && /^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName)) return;
    const li = selected();
    const can = (cls) => li && !readOnly && li.querySelector("button." + cls + ":not(:disabled)");
    if (ev.key === "j") move(1);
    else if (ev.key === "k") move(-1);
    else if (ev.key === "a" && can("approve")) decide(li, "approve", { always: false });
    else if (ev.key === "d" && can("deny")) deny(li);
    else if (ev.key === "o" && li) window.location.assign(li.querySelector(".where a").href);
    else return;
    ev.preventDefault();
  });

  if (items().length) select(items()[0]);
  M.every(3000, refresh);
})();
