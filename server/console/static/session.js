// A session's transcript, live: EventSource on /api/sessions/{id}/events (the cookie authenticates it;
// on a dropped connection the browser reconnects with Last-Event-ID and misses nothing). Rendered as
// `mainsail watch` renders it: prompts, the model's text (streamed as it arrives, then replaced by the
// recorded entry), each tool call folded with its result, Edit as a diff, permission requests and
// decisions, the closing line with the cost; each sub-agent's lines nested (and foldable) under its
// Agent/Task call. Only the actions that apply now are shown (Cancel while a turn runs, approve / deny
// while a request of this session waits, the message box while idle), kept so as the state changes.
// Everything from the stream is written as text; the marks are the page's SVG icons, never font glyphs.
"use strict";

(function () {
  const M = window.Mainsail;
  const { marked, oneLine, summary, shownName, callBody, resultText, text } = window.MainsailTranscript;
  const icon = M.icon;
  const page = document.getElementById("session-page");
  const sid = page.dataset.session;
  const out = document.getElementById("transcript");
  const live = document.getElementById("live");
  const stateLabel = document.getElementById("state");
  const writer = page.dataset.writer === "1";
  // A turn runs in these states: Cancel stops it (idle: nothing to stop; extracting: the answer is given).
  const RUNNING = ["querying", "running_tools", "awaiting_permission", "compacting"];
  const AGENT_TOOLS = ["Agent", "Task"];  // the sub-agent tool (Claude Code 2.1 calls it Agent; Task before)
  const asks = new Map();       // request id -> its .ask box (approve / deny shown while it waits)
  let pendingIds = new Set();   // the requests of this session waiting now (GET /api/sessions/{id})
  const calls = new Map();      // tool_use id -> <details> of the call
  const streaming = new Map();  // step id -> <div> holding the streamed text so far
  // Steps whose reply is recorded: a delta of theirs arriving after the entry (the deltas and the
  // transcript are separate streams) must not start a second copy of the text.
  const recorded = new Set();
  const agentLines = new Map();  // Agent call id -> the <div> its sub-agent's lines go in
  const early = new Map();       // Agent call id -> sub-agent lines that came before the call's own line
  const labels = new Set();      // the Agent labels given so far (two calls with one description: "x", "x #2")

  function taskLabel(input) {
    const base = oneLine((input && input.description) || "sub-agent", 80);
    let label = base;
    for (let n = 2; labels.has(label); n++) label = base + " #" + n;
    labels.add(label);
    return label;
  }

  function add(node) {
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    out.append(node);
    if (atBottom) node.scrollIntoView({ block: "end" });
    return node;
  }

  function toolCall(tu, cwd) {
    const details = M.el("details", "call");
    details.dataset.tool = tu.name;
    details.dataset.call = tu.id;
    const head = M.el("summary");
    const shown = shownName(tu.name);
    const isAgent = AGENT_TOOLS.includes(tu.name);
    const arg = isAgent ? taskLabel(tu.input) : summary(tu.name, tu.input, cwd);
    head.append(icon("call"), M.el("strong", null, shown), "(" + arg + ")");
    head.append(M.el("span", "outcome"));
    details.append(head, callBody(tu.name, tu.input || {}));
    if (isAgent) {  // its sub-agent's lines go here, under the call, in a block of their own that folds
      const agent = M.el("details", "agent");
      const what = (tu.input && tu.input.subagent_type) || "sub-agent";
      const fold = M.el("summary");
      fold.append(icon("agent"), M.el("span", "agent-title", oneLine(what, 40)), M.el("span", "agent-count", ""));
      const box = M.el("div", "agent-lines");
      agent.append(fold, box);
      agent.open = true;
      details.append(agent);
      details.open = true;
      agentLines.set(tu.id, box);
      for (const line of early.get(tu.id) || []) box.append(line);
      early.delete(tu.id);
    }
    calls.set(tu.id, details);
    out.append(details);
  }

  function toolResult(entry) {
    const blocks = Array.isArray(entry.message.content) ? entry.message.content : [];
    for (const block of blocks) {
      if (block.type !== "tool_result") continue;
      const text = resultText(block);
      const line = entry.display || text.split("\n")[0] || "";
      const details = calls.get(block.tool_use_id);
      const pre = M.el("pre", block.is_error ? "result error" : "result", text);
      if (!details) {
        add(marked("div", block.is_error ? "line error" : "line dim", "result", line.slice(0, 160)));
        continue;
      }
      details.querySelector(".outcome").replaceChildren(icon("result"), line.slice(0, 160));
      details.classList.toggle("failed", Boolean(block.is_error));
      details.append(pre);
    }
  }

  function assistant(entry) {
    const body = text(entry.message.content);
    const partial = streaming.get(entry.step_id);
    if (entry.step_id) recorded.add(entry.step_id);
    if (partial) {
      streaming.delete(entry.step_id);
      if (body) {
        partial.textContent = body;
        partial.classList.remove("streaming");
      } else partial.remove();
    } else if (body) add(M.el("div", "text", body));
    const uses = Array.isArray(entry.message.content) ? entry.message.content.filter((b) => b.type === "tool_use") : [];
    for (const tu of uses) toolCall(tu, entry.cwd);
    if (uses.length) out.lastChild.scrollIntoView({ block: "nearest" });
  }

  function tokens(u) {
    u = u || {};
    return (u.input_tokens || 0) + (u.output_tokens || 0) + (u.cache_read_input_tokens || 0) +
      (u.cache_creation_input_tokens || 0);
  }

  function result(e) {
    const facts = "session " + String(e.sessionId || e.session_id || "").slice(0, 8) + " · " + e.num_turns + " turn" + (e.num_turns === 1 ? "" : "s") +
      " · " + tokens(e.usage).toLocaleString("en-US") + " tokens · " + M.money(e.total_cost_usd) + " · " +
      (e.duration_ms / 1000).toFixed(1) + "s";
    const line = M.el("div", e.is_error ? "closing error" : "closing");
    if (e.is_error) line.append(icon("fail"), e.subtype + ": " + e.result + " · " + facts);
    else line.append(icon("ok"), facts);
    add(line);
  }

  function decision(e) {
    if (!(e.decided_by === "user" || e.decided_by === "timeout" || (e.rules_added || []).length)) return;
    const verb = e.decision === "allow" ? "approved" : "denied";
    const who = e.decider ? e.decided_by + " (" + e.decider + ")" : e.decided_by;
    const added = (e.rules_added || []).length ? "; always allowed now: " + e.rules_added.join(", ") : "";
    const said = e.message ? ": " + e.message : "";
    add(M.el("div", "decision " + (e.decision === "allow" ? "allow" : "deny"), "  " + verb + " by " + who + added + said));
    if (e.request_id && asks.has(e.request_id)) {
      pendingIds.delete(e.request_id);
      settle(asks.get(e.request_id));
    }
  }

  // A permission request: what it asks, and (for a token that may decide, while it waits) approve / deny.
  function request(e) {
    const box = M.el("div", "ask");
    box.dataset.request = e.request_id;
    const what = e.tool === "Bash" ? M.visible((e.input || {}).command || "") : summary(e.tool, e.input);
    box.append(icon("bolt"), e.tool + ": ", M.el("code", null, what));
    if (e.diff || e.diff_note) box.append(M.diff(e.diff, e.diff_note));  // the file as it was when it asked
    const note = M.el("div", "dim note", "waiting for approval (request " + e.request_id + ") · ");
    const link = M.el("a", null, "open the inbox");
    link.href = "/approvals";
    note.append(link);
    box.append(note);
    if (writer) {
      const decide = M.el("div", "decide");
      const why = M.el("input", "deny-message");
      why.type = "text";
      why.placeholder = "Deny: why not, or what to do instead";
      const yes = M.el("button", "approve", "Approve");
      const no = M.el("button", "deny danger", "Deny");
      yes.type = no.type = "button";
      yes.addEventListener("click", () => decideOn(box, "approve", {}));
      no.addEventListener("click", () => decideOn(box, "deny", why.value.trim() ? { message: why.value.trim() } : {}));
      decide.append(yes, why, no);
      box.append(decide);
    }
    asks.set(e.request_id, box);
    settle(box);
    add(box);
  }

  // A request's box shows its buttons only while the server says it waits.
  function settle(box) {
    const waiting = pendingIds.has(box.dataset.request);
    box.classList.toggle("settled", !waiting);
    box.querySelector(".note").hidden = !waiting;
  }

  async function decideOn(box, verb, body) {
    for (const b of box.querySelectorAll("button")) b.disabled = true;
    try {
      const done = await M.api("POST", "/api/sessions/" + encodeURIComponent(sid) + "/" + verb,
                               Object.assign({ request: box.dataset.request }, body));
      M.status((done.approved ? "Approved " : "Denied ") + done.tool + ": " + done.summary + ".");
      pendingIds.delete(box.dataset.request);
      settle(box);
    } catch (e) { M.status(e.message, true); }
    for (const b of box.querySelectorAll("button")) b.disabled = false;
    refreshSoon();
  }

  // The state's label and icon, and the actions that apply in it.
  function showState(state) {
    page.dataset.state = state;
    stateLabel.className = "state state-" + state;
    stateLabel.replaceChildren(icon(state), M.el("span", "label", state));
    const cancel = document.getElementById("cancel-button");
    const send = document.getElementById("send");
    if (cancel) cancel.hidden = !RUNNING.includes(state);
    if (send) send.hidden = state !== "idle";
    if (state !== "awaiting_permission") pendingIds = new Set();  // (this session's requests wait only in it)
    for (const box of asks.values()) settle(box);
  }

  function entry(e) {
    switch (e.type) {
      case "user":
        if (e.origin === "tool_result") toolResult(e);
        else if (!e.command && e.origin !== "interrupt") add(M.el("div", "prompt", "> " + text(e.message.content)));
        break;
      case "assistant": assistant(e); break;
      case "system":
        // a foreground agent's start and end: its Agent call's nested block already shows both
        if (e.subtype === "task" && e.task && e.task.is_backgrounded === false) break;
        add(M.el("div", "system " + e.subtype, (e.subtype === "command" ? "" : e.subtype + ": ") + e.content)); break;
      case "permission_request": request(e); break;
      case "permission_decision": decision(e); break;
      case "state":
        showState(e.dest);
        refreshSoon();
        break;
      case "compact_boundary": add(M.el("div", "system info divider", "conversation compacted (" + e.trigger + ")")); break;
      case "rewind": add(marked("div", "system warning", "rewind", "rewound the " +
        [e.code && "code", e.conversation && "conversation"].filter(Boolean).join(" and ") +
        " to before “" + e.prompt.slice(0, 60) + "”")); break;
      case "result": result(e); break;
      default: break;
    }
    if (Array.isArray(e.repaired) && e.repaired.length) {  // text UTF-8 cannot encode was stored as U+FFFD
      add(marked("div", "system warning", "warn", "text repaired: characters UTF-8 cannot encode (lone surrogates) " +
        "were stored as U+FFFD in " + e.repaired.join(", ")));
    }
  }

  // A sub-agent's line: inside its Agent call's block (kept until the call's line comes, if it is first);
  // at the end of the transcript, with the sub-agent's id, when its call is not known.
  function childLine(sessionId, call, node) {
    const box = call ? agentLines.get(call) : null;
    if (box) {
      const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
      box.append(node);
      const n = box.children.length;
      box.parentNode.querySelector(".agent-count").textContent = " · " + n + " line" + (n === 1 ? "" : "s");
      if (atBottom) node.scrollIntoView({ block: "end" });
    } else if (call) {
      if (!early.has(call)) early.set(call, []);
      early.get(call).push(node);
    } else {
      node.prepend("[sub-agent " + sessionId.slice(0, 8) + "] ");
      add(node);
    }
  }

  function child(sessionId, call, e) {
    const line = (cls, mark, text) => childLine(sessionId, call, marked("div", cls, mark, text));
    if (e.type === "assistant" && Array.isArray(e.message.content)) {
      for (const tu of e.message.content.filter((b) => b.type === "tool_use")) {
        line("child", "call", shownName(tu.name) + "(" + summary(tu.name, tu.input, e.cwd) + ")");
      }
    } else if (e.type === "user" && e.origin === "tool_result") {
      const block = (Array.isArray(e.message.content) ? e.message.content : [])[0] || {};
      line(block.is_error ? "child result error" : "child result dim", "result",
        (e.display || resultText(block).split("\n")[0] || "").slice(0, 150));
    } else if (e.type === "permission_request") {
      line("child ask", "bolt", e.tool + ": " + summary(e.tool, e.input, e.cwd) + " (waits for approval)");
    } else if (e.type === "result") {
      line("child dim end", e.is_error ? "fail" : "ok", (e.is_error ? e.subtype : "answered") + " · " +
        e.num_turns + " turns · " + M.money(e.total_cost_usd));
    }
  }

  // The header's figures, re-read when the state changes (a turn ended, a request came or went); one read
  // for a burst of changes (the replay of a long transcript).
  let factsTimer = null;
  function refreshSoon() {
    if (factsTimer === null) factsTimer = window.setTimeout(() => { factsTimer = null; refreshFacts(); }, 500);
  }

  async function refreshFacts() {
    try {
      const s = await M.api("GET", "/api/sessions/" + encodeURIComponent(sid));
      document.getElementById("turns").textContent = s.turns;
      document.getElementById("cost").textContent = M.money(s.cost_usd) + " · " + s.tokens.toLocaleString("en-US") + " tokens";
      document.getElementById("waiting").textContent = s.pending + " request(s) in the inbox";
      pendingIds = new Set((s.pending_requests || []).map((r) => r.id));
      showState(s.state);
    } catch (e) { M.status(e.message, true); }
  }

  function delta(d) {
    if (recorded.has(d.step)) return;
    let node = streaming.get(d.step);
    if (!node) {
      node = add(M.el("div", "text streaming", ""));
      streaming.set(d.step, node);
    }
    node.textContent += d.text;
  }

  function follow() {
    const source = new EventSource("/api/sessions/" + encodeURIComponent(sid) + "/events");
    source.addEventListener("open", () => { live.textContent = "Live."; });
    source.addEventListener("entry", (ev) => entry(JSON.parse(ev.data).entry));
    source.addEventListener("delta", (ev) => delta(JSON.parse(ev.data)));
    source.addEventListener("child", (ev) => { const d = JSON.parse(ev.data); child(d.session, d.call, d.entry); });
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) {
        live.textContent = "The live stream closed (signed out, or the session is gone). Reload the page.";
      } else live.textContent = "Reconnecting… (nothing is lost: the stream resumes where it stopped)";
    });
  }

  const sendForm = document.getElementById("send");
  if (sendForm) sendForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const box = document.getElementById("message");
    if (!box.value.trim()) return;
    try {
      const done = await M.api("POST", "/api/sessions/" + encodeURIComponent(sid) + "/messages", { message: box.value });
      box.value = "";
      M.status(done.message);
    } catch (e) { M.status(e.message, true); }
  });

  const cancelButton = document.getElementById("cancel-button");
  if (cancelButton) cancelButton.addEventListener("click", async () => {
    try {
      const done = await M.api("POST", "/api/sessions/" + encodeURIComponent(sid) + "/cancel", {});
      M.status(done.message);
    } catch (e) { M.status(e.message, true); }
  });

  showState(page.dataset.state);
  follow();
  refreshFacts();
})();
