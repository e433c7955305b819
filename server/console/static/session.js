// A session's transcript, live: EventSource on /api/sessions/{id}/events (the cookie authenticates it;
// on a dropped connection the browser reconnects with Last-Event-ID and misses nothing). Rendered as
// `mainsail watch` renders it: prompts, the model's text (streamed as it arrives, then replaced by the
// recorded entry), each tool call folded with its result, Edit as a diff, permission requests and
// decisions, the closing line with the cost. Everything from the stream is written as text.
"use strict";

(function () {
  const M = window.Mainsail;
  const page = document.getElementById("session-page");
  const sid = page.dataset.session;
  const out = document.getElementById("transcript");
  const live = document.getElementById("live");
  const stateLabel = document.getElementById("state");
  const calls = new Map();      // tool_use id -> <details> of the call
  const streaming = new Map();  // step id -> <div> holding the streamed text so far
  // Steps whose reply is recorded: a delta of theirs arriving after the entry (the deltas and the
  // transcript are separate streams) must not start a second copy of the text.
  const recorded = new Set();
  const SUMMARY_KEYS = ["file_path", "notebook_path", "pattern", "command", "path", "url", "query", "description",
                        "bash_id", "shell_id"];
  const PATH_KEYS = ["file_path", "notebook_path", "path", "pattern"];
  const agentLines = new Map();  // Task call id -> the <div> its sub-agent's lines go in
  const early = new Map();       // Task call id -> sub-agent lines that came before the call's own line
  const labels = new Set();      // the Task labels given so far (two calls with one description: "x", "x #2")

  function oneLine(text, max) {
    const s = M.visible(String(text).split(/\s+/).join(" ").trim());
    return s.length <= max ? s : s.slice(0, max - 3) + "...";
  }

  // A path inside the session's directory, relative to it (as Claude Code shows it); others as given.
  function shownPath(path, cwd) {
    const base = String(cwd || "").replace(/\/+$/, "");
    if (!base || typeof path !== "string" || !path.startsWith("/")) return path;
    if (path === base) return ".";
    return path.startsWith(base + "/") ? path.slice(base.length + 1) || "." : path;
  }

  function summary(name, input, cwd) {
    input = input && typeof input === "object" ? input : {};
    if (name === "TodoWrite" && Array.isArray(input.todos)) return input.todos.length + " todos";
    for (const key of SUMMARY_KEYS) {
      if (key in input) {
        const value = name !== "Bash" && PATH_KEYS.includes(key) ? shownPath(input[key], cwd) : input[key];
        return oneLine(value, 80);
      }
    }
    return "";
  }

  function taskLabel(input) {
    const base = oneLine((input && input.description) || "sub-agent", 80);
    let label = base;
    for (let n = 2; labels.has(label); n++) label = base + " #" + n;
    labels.add(label);
    return label;
  }

  function shownName(name) {
    if (!name.startsWith("mcp__")) return name;
    const [server, ...tool] = name.slice(5).split("__");
    return server + " - " + tool.join("__") + " (MCP)";
  }

  function add(node) {
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    out.append(node);
    if (atBottom) node.scrollIntoView({ block: "end" });
    return node;
  }

  // -/+ lines of an edit's input, shown as a unified diff reads (M.diff, as the inbox shows its diffs).
  function diff(oldText, newText) {
    const lines = [];
    if (oldText !== null) for (const line of String(oldText || "").split("\n")) lines.push("-" + line);
    for (const line of String(newText || "").split("\n")) lines.push("+" + line);
    return M.diff(lines.join("\n"));
  }

  function callBody(name, input) {
    const body = M.el("div", "call-body");
    if (name === "Edit") body.append(diff(input.old_string, input.new_string));
    else if (name === "MultiEdit" && Array.isArray(input.edits)) {
      for (const e of input.edits) body.append(diff(e && e.old_string, e && e.new_string));
    } else if (name === "Write") body.append(diff(null, input.content));
    else if (name === "Bash") body.append(M.el("pre", "input", "$ " + M.visible(input.command || "")));
    else if (name === "TodoWrite" && Array.isArray(input.todos)) {
      for (const t of input.todos) {
        const mark = t && t.status === "completed" ? "☒ " : t && t.status === "in_progress" ? "◐ " : "☐ ";
        body.append(M.el("div", "todo", mark + (t && t.content)));
      }
    } else body.append(M.el("pre", "input", JSON.stringify(input, null, 2)));
    return body;
  }

  function toolCall(tu, cwd) {
    const details = M.el("details", "call");
    details.dataset.tool = tu.name;
    details.dataset.call = tu.id;
    const head = M.el("summary");
    const shown = shownName(tu.name);
    const arg = tu.name === "Task" ? taskLabel(tu.input) : summary(tu.name, tu.input, cwd);
    head.append(M.el("span", "dot", "⏺ "), M.el("strong", null, shown), "(" + arg + ")");
    head.append(M.el("span", "outcome"));
    details.append(head, callBody(tu.name, tu.input || {}));
    if (tu.name === "Task") {  // its sub-agent's lines go here, under the call (open while it works)
      const box = M.el("div", "agent-lines");
      details.append(box);
      details.open = true;
      agentLines.set(tu.id, box);
      for (const line of early.get(tu.id) || []) box.append(line);
      early.delete(tu.id);
    }
    calls.set(tu.id, details);
    out.append(details);
  }

  function resultText(block) {
    if (typeof block.content === "string") return block.content;
    // An image or a PDF (Read: workflows/tools/media.py) is named by its type, as ToolResultBlock.text names it.
    return (block.content || []).map((b) => b.text || (b.source ? "[" + b.source.media_type + "]" : "")).join("\n");
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
        add(M.el("div", block.is_error ? "line error" : "line dim", "  ⎿  " + line.slice(0, 160)));
        continue;
      }
      details.querySelector(".outcome").textContent = "  ⎿  " + line.slice(0, 160);
      details.classList.toggle("failed", Boolean(block.is_error));
      details.append(pre);
    }
  }

  function text(content) {
    if (typeof content === "string") return content;
    return (content || []).filter((b) => b.type === "text").map((b) => b.text).join("");
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
    if (e.is_error) line.append(M.el("span", "mark", "✗ "), e.subtype + ": " + e.result + " · " + facts);
    else line.append(M.el("span", "mark", "✓ "), facts);
    add(line);
  }

  function decision(e) {
    if (!(e.decided_by === "user" || e.decided_by === "timeout" || (e.rules_added || []).length)) return;
    const verb = e.decision === "allow" ? "approved" : "denied";
    const who = e.decider ? e.decided_by + " (" + e.decider + ")" : e.decided_by;
    const added = (e.rules_added || []).length ? "; always allowed now: " + e.rules_added.join(", ") : "";
    const said = e.message ? ": " + e.message : "";
    add(M.el("div", "decision " + (e.decision === "allow" ? "allow" : "deny"), "  " + verb + " by " + who + added + said));
  }

  function request(e) {
    const box = M.el("div", "ask");
    const what = e.tool === "Bash" ? M.visible((e.input || {}).command || "") : summary(e.tool, e.input);
    box.append(M.el("span", "dot", "⚡ "), e.tool + ": ", M.el("code", null, what));
    if (e.diff || e.diff_note) box.append(M.diff(e.diff, e.diff_note));  // the file as it was when it asked
    const note = M.el("div", "dim", "waiting for approval (request " + e.request_id + ") · ");
    const link = M.el("a", null, "open the inbox");
    link.href = "/approvals";
    note.append(link);
    box.append(note);
    add(box);
  }

  function entry(e) {
    switch (e.type) {
      case "user":
        if (e.origin === "tool_result") toolResult(e);
        else if (!e.command && e.origin !== "interrupt") add(M.el("div", "prompt", "> " + text(e.message.content)));
        break;
      case "assistant": assistant(e); break;
      case "system": add(M.el("div", "system " + e.subtype, (e.subtype === "command" ? "" : e.subtype + ": ") + e.content)); break;
      case "permission_request": request(e); break;
      case "permission_decision": decision(e); break;
      case "state":
        stateLabel.textContent = e.dest;
        stateLabel.className = "state state-" + e.dest;
        refreshSoon();
        break;
      case "compact_boundary": add(M.el("div", "system info", "── conversation compacted (" + e.trigger + ") ──")); break;
      case "rewind": add(M.el("div", "system warning", "⏪ rewound the " +
        [e.code && "code", e.conversation && "conversation"].filter(Boolean).join(" and ") +
        " to before “" + e.prompt.slice(0, 60) + "”")); break;
      case "result": result(e); break;
      default: break;
    }
    if (Array.isArray(e.repaired) && e.repaired.length) {  // text UTF-8 cannot encode was stored as U+FFFD
      add(M.el("div", "system warning", "⚠ text repaired: characters UTF-8 cannot encode (lone surrogates) " +
        "were stored as U+FFFD in " + e.repaired.join(", ")));
    }
  }

  // A sub-agent's line: inside its Task call's block (kept until the call's line comes, if it is first);
  // at the end of the transcript, with the sub-agent's id, when its call is not known.
  function childLine(sessionId, call, node) {
    const box = call ? agentLines.get(call) : null;
    if (box) {
      const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
      box.append(node);
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
    const line = (cls, text) => childLine(sessionId, call, M.el("div", cls, text));
    if (e.type === "assistant" && Array.isArray(e.message.content)) {
      for (const tu of e.message.content.filter((b) => b.type === "tool_use")) {
        line("child", "⏺ " + shownName(tu.name) + "(" + summary(tu.name, tu.input, e.cwd) + ")");
      }
    } else if (e.type === "user" && e.origin === "tool_result") {
      const block = (Array.isArray(e.message.content) ? e.message.content : [])[0] || {};
      line(block.is_error ? "child error" : "child dim",
        "  ⎿  " + (e.display || resultText(block).split("\n")[0] || "").slice(0, 150));
    } else if (e.type === "permission_request") {
      line("child ask", "⚡ " + e.tool + ": " + summary(e.tool, e.input, e.cwd) + " (waits for approval)");
    } else if (e.type === "result") {
      line("child dim", (e.is_error ? "✗ " + e.subtype : "✓ answered") + " · " + e.num_turns + " turns · " +
        M.money(e.total_cost_usd));
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

  document.getElementById("send").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const box = document.getElementById("message");
    if (!box.value.trim()) return;
    try {
      const done = await M.api("POST", "/api/sessions/" + encodeURIComponent(sid) + "/messages", { message: box.value });
      box.value = "";
      M.status(done.message);
    } catch (e) { M.status(e.message, true); }
  });

  document.getElementById("cancel-button").addEventListener("click", async () => {
    try {
      const done = await M.api("POST", "/api/sessions/" + encodeURIComponent(sid) + "/cancel", {});
      M.status(done.message);
    } catch (e) { M.status(e.message, true); }
  });

  follow();
})();
