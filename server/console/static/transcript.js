// How a session's transcript shows one thing, shared by session.js: a line with its icon (Mainsail.icon: the
// pages' SVG sprites, never a font glyph), a tool call's one-line summary (paths inside the session's directory relative to it, as
// Claude Code shows them), its body (an edit as a diff, a command, the todos), a result's text. Text only.
"use strict";

window.MainsailTranscript = (function () {
  const M = window.Mainsail;
  const SUMMARY_KEYS = ["file_path", "notebook_path", "pattern", "command", "path", "url", "query", "description",
                        "bash_id", "shell_id"];
  const PATH_KEYS = ["file_path", "notebook_path", "path", "pattern"];

  // <tag class=cls> holding its icon, then text.
  function marked(tag, cls, name, text) {
    const node = M.el(tag, cls);
    node.append(M.icon(name), text);
    return node;
  }

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

  function shownName(name) {
    if (!name.startsWith("mcp__")) return name;
    const [server, ...tool] = name.slice(5).split("__");
    return server + " - " + tool.join("__") + " (MCP)";
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
        const mark = t && t.status === "completed" ? "todo-done" : t && t.status === "in_progress" ? "todo-doing" : "todo";
        body.append(marked("div", "todo", mark, String(t && t.content)));
      }
    } else body.append(M.el("pre", "input", JSON.stringify(input, null, 2)));
    return body;
  }

  function resultText(block) {
    if (typeof block.content === "string") return block.content;
    // An image or a PDF (Read: workflows/tools/media.py) is named by its type, as ToolResultBlock.text names it.
    return (block.content || []).map((b) => b.text || (b.source ? "[" + b.source.media_type + "]" : "")).join("\n");
  }

  function text(content) {
    if (typeof content === "string") return content;
    return (content || []).filter((b) => b.type === "text").map((b) => b.text).join("");
  }

  return { marked, oneLine, shownPath, summary, shownName, diff, callBody, resultText, text };
})();
