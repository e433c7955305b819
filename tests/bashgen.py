"""Generated Bash tool commands over bash's odd corners (hypothesis strategies).

Most lines are plain read-only or file commands the checker may approve, so the
execution oracle (tests/exec_oracle.py) has many approved lines to run; then
mutations put bash's corners where they hurt: backslash-newline anywhere (in a
command name, before ``#``, ``;``, ``&&``, ``|``), comments, every quoting form,
here-documents with quoted and unquoted delimiters, arithmetic, brace, tilde and
glob forms, control characters, Unicode, separators, redirections, assignments.
Used by tests/integration/test_checker_oracle.py and bench/fuzz_checker.py.
"""

from __future__ import annotations

from hypothesis import strategies as st

PROGRAMS = ["ls", "cat", "head", "tail", "wc", "grep", "sort", "uniq", "cut", "tr", "stat", "basename",
            "dirname", "echo", "printf", "true", "false", "pwd", "cd", "touch", "mkdir", "cp", "test", "env",
            "nice", "timeout 5", "command", "exec", "time", "du", "file", "diff", "cmp", "od", "nl", "rev",
            "exec -a x", "command -p", "nice -n 5", "env -i", "env A=1", "timeout -s KILL 5", "stdbuf -o0",
            "nohup", "xargs", "time -p", "builtin", "then", "do", "{", "[[", "((", "!", "coproc", "let", "[",
            "xargs -0", "env -- ", "sudo", "git status", "git diff --stat", "git log -1"]
PLAIN = ["a.txt", "src", "sub", "d", "x", "-l", "-n", "-a", "1", "src/x.py", "out.txt", "--", "-", ".", "..",
         "é", "☃", "𝔘x", "a b", "PWNED", "%s\\n", "-c", "2", "d/y", ".env", "sub/.env", ".e?v", "link-env",
         ".env.example"]
ODD = ["*", "?", "[ab]", "*.txt", "s*", "{a,b}", "{1..3}", "~", "~/x", "~+", "~-", "~root", "$x", "${HOME}",
       "$(echo a)", "`echo a`", "$((1+2))", "$[1+2]", "#x", "a#b", "x=y", "\\#", "'#'", "!", "^", "%", "@(a)",
       "$'a\\nb'", '$"a"', "a\\ b", "\\", "'", '"', "(", ")", "{", "}", ";", "&", "|", "<", ">", "\u00a0", "\u2028",
       "\ufeff", "\x01", "\x7f", "\t", "\r", "=", "a=", "[[", "]]", "!x", "<(ls)", ">(cat)", ";;", ";&", "A+=1",
       "a[0]=1", "{fd}>x", "\\", "--x=~", "fi", "done", "in", "esac", "$'\\''", "~+/x", "./-delete", "-delete",
       "--", "$@", "$*", "$#", "$?", "$$", "$!", "$-", "$0", "${#x}", "${x[@]}", "\u00a0x"]
SEPARATORS = [";", " ; ", "&&", " && ", "||", " || ", "|", " | ", "|&", "&", " & ", "\n", ";\n", "\n\n", " \\\n"]
REDIRECTS = [" >out.txt", " 2>&1", " <a.txt", " >/dev/null", " 2>/dev/null", " >>log.txt", " <<<w", " 3>&-",
             " &>out.txt", " >|out.txt", " 1>&2", " <>out.txt", " >&out.txt", "> PWNED", " <.env", " 3<.e?v",
             " <sub/.env"]
ASSIGNMENTS = ["A=1 ", "LC_ALL=C ", "PATH=/x ", "A='b c' ", "A=$x ", "A=~ ", "A=( ) "]
COMMENTS = [" # c", " #;touch PWNED", "#x", " # a \\", " #'"]
INSERTS = ["\\\n", "\\\n", "\\\n", " \\\n", "\\\r\n", "\\\\\n", "#", ";", "\n", "'", '"', "\\", "$", "`", "&",
           "|", " ", "\t", "{", "}", "(", ")", "<", ">", "~", "*", "=", "é", "\u00a0", "\x00"]
DELIMITERS = ["E", "'E'", '"E"', "\\E", "E\\\nF", "-E", "'E F'"]
BODIES = ["x", "$x", "a\\\nE", "E\\\nE", "\\$x", "`echo a`", "touch PWNED", "#", "'", "E ", "\tE", "$(touch PWNED)"]


def _quote(draw, text: str) -> str:
    style = draw(st.sampled_from(["none"] * 5 + ["single", "double", "escape", "split", "ansi"]))
    if style == "single" and "'" not in text:
        return f"'{text}'"
    if style == "double" and not any(c in text for c in '"$`\\!'):
        return f'"{text}"'
    if style == "ansi" and not any(c in text for c in "'\\"):
        return f"$'{text}'"
    if style == "escape":
        return "".join("\\" + c if c not in "\n" else c for c in text)
    if style == "split" and len(text) > 1:
        cut = draw(st.integers(1, len(text) - 1))
        return f"{text[:cut]}'{text[cut:]}'" if "'" not in text else text
    return text


@st.composite
def word(draw) -> str:
    if draw(st.integers(0, 14)) == 0:
        return draw(st.sampled_from(ODD))
    text = draw(st.sampled_from(PLAIN))
    if " " in text or "\\" in text:
        return f"'{text}'"
    return _quote(draw, text)


@st.composite
def simple(draw) -> str:
    out = draw(st.sampled_from(ASSIGNMENTS)) if draw(st.integers(0, 7)) == 0 else ""
    out += _quote(draw, draw(st.sampled_from(PROGRAMS))) if draw(st.integers(0, 5)) else draw(st.sampled_from(PROGRAMS))
    for w in draw(st.lists(word(), max_size=4)):
        out += draw(st.sampled_from([" ", " ", "  ", "\t"])) + w
    if draw(st.integers(0, 4)) == 0:
        out += draw(st.sampled_from(REDIRECTS))
    return out


@st.composite
def heredoc(draw) -> str:
    delim = draw(st.sampled_from(DELIMITERS))
    end = {"'E'": "E", '"E"': "E", "\\E": "E", "E\\\nF": "EF", "-E": "E", "'E F'": "E F"}.get(delim, delim)
    op = "<<-" if delim == "-E" else "<<"
    delim = "E" if delim == "-E" else delim
    body = "\n".join(draw(st.lists(st.sampled_from(BODIES), max_size=3)))
    tail = draw(st.sampled_from(["", " >out.txt", " | wc -l", "; ls", " && touch PWNED"]))
    end_line = draw(st.sampled_from([end, end, "\t" + end, end + " ", end + "\\"]))
    return f"{draw(st.sampled_from(['cat', 'wc -l', 'grep x']))} {op}{delim}{tail}\n{body}\n{end_line}"


@st.composite
def compound(draw) -> str:
    """A group, subshell, if, loop or function around a simple command, often redirected."""
    inner = draw(simple())
    form = draw(st.sampled_from(["{{ {}; }}", "({})", "if true; then {}; fi", "while false; do {}; done",
                                 "for x in a; do {}; done", "case a in a) {};; esac", "f() {{ {}; }}; f", "! {}",
                                 "time {}", "{{ {} ; }} 2>&1", "( {} ) | cat"]))
    out = form.format(inner)
    if draw(st.booleans()):
        out += draw(st.sampled_from(REDIRECTS))
    return out


@st.composite
def line(draw) -> str:
    """One Bash tool command: a few simple commands (or a here-document) joined by separators, mutated."""
    parts = draw(st.lists(st.one_of(simple(), simple(), simple(), heredoc(), compound()), min_size=1, max_size=3))
    out = parts[0]
    for part in parts[1:]:
        out += draw(st.sampled_from(SEPARATORS)) + part
    if draw(st.integers(0, 5)) == 0:
        out += draw(st.sampled_from(COMMENTS))
    if draw(st.booleans()):
        return out  # half the lines as written: many are approved, so the oracle runs them
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):  # bash's corners where they hurt
        at = draw(st.integers(0, len(out)))
        out = out[:at] + draw(st.sampled_from(INSERTS)) + out[at:]
    if draw(st.integers(0, 6)) == 0:
        out += draw(st.sampled_from(["\\\n#;touch PWNED", "\\\n#&&touch PWNED", "\n", " &", ";"]))
    return out


def lines(min_size: int = 1, max_size: int = 200) -> st.SearchStrategy[list[str]]:
    """A batch of distinct lines (one sandbox launch runs a batch)."""
    return st.lists(line(), min_size=min_size, max_size=max_size, unique=True)
