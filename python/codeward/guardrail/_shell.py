"""A best-effort bash tokenizer for the command guardrail.

It is not a shell and expands nothing: it splits a command into words and
operators the way bash would, removes quotes, and keeps every expansion
(``$VAR``, ``${VAR:-x}``, ``~``, ``$(...)``, backticks, ``<(...)``) as a
marked part of its word, so the rules can tell data from commands and see
inside substitutions and here-documents.

Hostile input must not crash or stall it: the scanner is a loop over an
explicit stack of frames (no recursion, so ten thousand nested ``$(`` cost a
list, not the C stack), every step consumes input, and a :class:`Budget`
bounds the total work. Malformed input (an unterminated quote or
substitution) is tokenised as far as it goes and marked ``unbalanced``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

__all__ = [
    "ANSI_ESCAPE",
    "LIT",
    "SUB",
    "TILDE",
    "VAR",
    "Budget",
    "Part",
    "Redirect",
    "Script",
    "Token",
    "TooComplex",
    "Word",
    "ansi_one",
    "lex",
]

LIT, VAR, SUB, TILDE = "lit", "var", "sub", "tilde"

_PLAIN = re.compile(r"[^ \t\n;&|<>()'\"\\$`]+")
# A whole unquoted word with nothing special in it, and the blanks after it (the fast path).
_SIMPLE_WORD = re.compile(
    r"([^ \t\n;&|<>()'\"\\$`#~][^ \t\n;&|<>()'\"\\$`]*)(?=[ \t\n;&|()]|\Z)[ \t]*"
)
_BLANKS = re.compile(r"[ \t]+")
_DQ_RUN = re.compile(r'[^"\\$`]+')
_DOC_RUN = re.compile(r"[^\\$`]+")
_PARAM_RUN = re.compile(r"[^{}\"'\\$`]+")
_PARAM_DQ_RUN = re.compile(r'[^"\\$`]+')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TILDE_RUN = re.compile(r"~[A-Za-z0-9._+-]*")
_BACKTICK_STOP = re.compile(r"[`\\]")
_ANSI_STOP = re.compile(r"[\\']")
_REDIR = re.compile(r"<<<|<<-|<<|<>|<&|<|>>|>&|>\||>")
_PARAM_BODY = re.compile(r"[#!]?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(:?[-=+?])?(.*)\Z", re.S)
ANSI_ESCAPE = re.compile(
    r"\\(?:x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})|c(.)|(.))",
    re.S,
)
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


class TooComplex(Exception):
    """The input needs more analysis than the budget allows."""


class Budget:
    """Units of work left (about one per input character scanned)."""

    def __init__(self, units: int) -> None:
        self.left = units

    def charge(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise TooComplex


@dataclass(eq=False)
class Part:
    """A piece of a word: literal text or one expansion, quoted or not.

    For ``LIT`` ``text`` is the text after quote removal; for ``VAR`` it is
    the variable's name. ``raw`` is the source of an expansion (``$HOME``,
    ``${x:-/}``, ``$(curl x)``, ``~``). ``scripts`` are the command
    substitutions a ``SUB`` (or a ``VAR`` such as ``${x:-$(y)}``) runs, and
    ``defaults`` the word of ``${x:-word}`` / ``${x=word}``.
    """

    kind: str
    text: str
    raw: str
    quoted: bool
    scripts: tuple[Script, ...] = ()
    defaults: tuple[str, ...] = ()


@dataclass(eq=False)
class Word:
    """A shell word: its parts, and whether any of it was quoted."""

    parts: list[Part]
    quoted: bool = False

    def literal(self) -> str | None:
        """The text when the word has no expansion at all, else None."""
        parts = self.parts
        if len(parts) == 1:
            return parts[0].text if parts[0].kind == LIT else None
        if all(p.kind == LIT for p in parts):
            return "".join(p.text for p in parts)
        return None

    def source(self) -> str:
        """The word after quote removal, expansions shown as written."""
        return "".join(p.text if p.kind == LIT else p.raw for p in self.parts)

    def subs(self) -> list[Script]:
        """Every command substitution in the word."""
        return [s for p in self.parts for s in p.scripts]


@dataclass(eq=False)
class Redirect:
    """``[fd]op target``; a here-document keeps its body and whether it is expanded."""

    op: str
    fd: str | None
    target: Word | None = None
    heredoc: str | None = None
    expands: bool = True


# A str token is an operator: ; & && || | |& ( ) \n ;; ...
Token = Union[Word, Redirect, str]  # noqa: UP007 (a runtime alias on Python 3.10)


@dataclass(eq=False)
class Script:
    """The tokens of one command list, and the substitutions nested in it."""

    tokens: list[Token] = field(default_factory=list)
    children: list[Script] = field(default_factory=list)
    unbalanced: bool = False
    downloads: bool = False  # filled in by the analysis: it or a child runs a downloader
    decodes: bool = False  # ... or decodes hidden text (base64 -d, xxd -r)
    commands: list[object] | None = None  # cache for the parser


class _Src:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0


_SCRIPT, _PARAM, _DOC = "script", "param", "doc"


class _Frame:
    """One nested context of the scanner: a command list, a ``${...}`` or a here-document."""

    __slots__ = (
        "closer",
        "depth",
        "in_dq",
        "kind",
        "owner",
        "parts",
        "pending",
        "quoted_ctx",
        "raw",
        "src",
        "start",
        "target",
        "word",
        "word_quoted",
    )

    def __init__(self, kind: str, src: _Src, owner: Script, *, closer: bool, quoted_ctx: bool):
        self.kind = kind
        self.src = src
        self.owner = owner
        self.closer = closer  # a $( or <( frame: ends at its unmatched ')'
        self.quoted_ctx = quoted_ctx  # the part it delivers is inside double quotes
        self.start = src.pos
        self.raw: str | None = None  # the source of a backtick substitution
        self.depth = 0
        self.in_dq = False
        self.word: list[Part] | None = None
        self.word_quoted = False
        self.parts: list[Part] = []
        self.pending: list[Redirect] = []
        self.target: Redirect | None = None


def lex(text: str, budget: Budget) -> Script:
    """Tokenises ``text``; raises TooComplex when the budget runs out."""
    return _Lexer(budget).run(text)


class _Lexer:
    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.stack: list[_Frame] = []

    def run(self, text: str) -> Script:
        root = Script()
        self.stack = [_Frame(_SCRIPT, _Src(text), root, closer=False, quoted_ctx=False)]
        steps = {_SCRIPT: self._step_script, _PARAM: self._step_param, _DOC: self._step_doc}
        stack, budget = self.stack, self.budget
        while stack:
            frame = stack[-1]
            src = frame.src
            before = src.pos
            steps[frame.kind](frame)
            budget.left -= 1 + max(0, src.pos - before)
            if budget.left < 0:
                raise TooComplex
        return root

    # -- frames ------------------------------------------------------------------------------

    def _push_script(self, parent: _Frame, src: _Src, *, closer: bool, raw: str | None) -> None:
        child = Script()
        parent.owner.children.append(child)
        frame = _Frame(_SCRIPT, src, child, closer=closer, quoted_ctx=parent.in_dq)
        frame.raw = raw
        if raw is None:
            frame.start = src.pos - 2  # "$(" "<(" ">("
        self.stack.append(frame)
        self.budget.charge(16)

    def _push_param(self, parent: _Frame) -> None:
        frame = _Frame(_PARAM, parent.src, parent.owner, closer=False, quoted_ctx=parent.in_dq)
        frame.start = parent.src.pos - 2  # "${"
        self.stack.append(frame)
        self.budget.charge(16)

    def _pop(self, frame: _Frame) -> None:
        self.stack.pop()
        if not self.stack:
            return
        parent = self.stack[-1]
        if frame.kind == _SCRIPT:
            raw = frame.raw
            if raw is None:
                raw = frame.src.text[frame.start : frame.src.pos]
            self._add(parent, Part(SUB, "", raw, frame.quoted_ctx, (frame.owner,)))
        elif frame.kind == _PARAM:
            self._add(parent, _param_part(frame))

    def _add(self, frame: _Frame, part: Part) -> None:
        if frame.kind != _SCRIPT:
            frame.parts.append(part)
            return
        if frame.word is None:
            frame.word = []
        word = frame.word
        if part.kind == LIT and word and word[-1].kind == LIT and word[-1].quoted == part.quoted:
            last = word[-1]
            word[-1] = Part(LIT, last.text + part.text, "", part.quoted)
        else:
            word.append(part)
        if part.quoted:
            frame.word_quoted = True

    def _lit(self, frame: _Frame, text: str, quoted: bool) -> None:
        self._add(frame, Part(LIT, text, "", quoted))

    # -- words and operators -----------------------------------------------------------------

    def _finish_word(self, frame: _Frame) -> None:
        if frame.word is None:
            return
        word = Word(frame.word, frame.word_quoted)
        frame.word = None
        frame.word_quoted = False
        target = frame.target
        if target is None:
            frame.owner.tokens.append(word)
            return
        frame.target = None
        target.target = word
        if target.op in ("<<", "<<-"):
            target.expands = not word.quoted
            frame.pending.append(target)

    def _op(self, frame: _Frame, op: str) -> None:
        self._finish_word(frame)
        frame.target = None
        frame.owner.tokens.append(op)

    # -- the command-list frame --------------------------------------------------------------

    def _step_script(self, f: _Frame) -> None:
        src = f.src
        t, i = src.text, src.pos
        if i >= len(t):
            self._finish_word(f)
            if f.closer or f.in_dq:
                f.owner.unbalanced = True
            self._pop(f)
            return
        c = t[i]
        if f.in_dq:
            self._step_dquoted(f, t, i, c)
            return
        if f.word is None and f.target is None:
            m = _SIMPLE_WORD.match(t, i)
            if m is not None:
                f.owner.tokens.append(Word([Part(LIT, m.group(1), "", False)]))
                src.pos = m.end()
                return
        if c in " \t":
            self._finish_word(f)
            m = _BLANKS.match(t, i)
            src.pos = m.end() if m else i + 1
        elif c == "\n":
            self._op(f, "\n")
            src.pos = i + 1
            self._read_heredocs(f)
        elif c == "#" and f.word is None:
            j = t.find("\n", i)
            src.pos = len(t) if j < 0 else j
        elif c == "'":
            j = t.find("'", i + 1)
            if j < 0:
                f.owner.unbalanced = True
                j = len(t)
            self._lit(f, t[i + 1 : j], True)
            src.pos = min(j + 1, len(t))
        elif c == '"':
            f.in_dq = True
            self._lit(f, "", True)
            src.pos = i + 1
        elif c == "\\":
            nxt = t[i + 1 : i + 2]
            if nxt == "\n":
                src.pos = i + 2
            elif nxt:
                self._lit(f, nxt, True)
                src.pos = i + 2
            else:
                self._lit(f, "\\", False)
                src.pos = i + 1
        elif c == "$":
            self._dollar(f, quoted=False)
        elif c == "`":
            self._backtick(f, quoted=False)
        elif c == "(":
            if f.closer:
                f.depth += 1
            self._op(f, "(")
            src.pos = i + 1
        elif c == ")":
            if f.closer and f.depth == 0:
                self._finish_word(f)
                src.pos = i + 1
                self._pop(f)
                return
            f.depth = max(0, f.depth - 1)
            self._op(f, ")")
            src.pos = i + 1
        elif c in "<>":
            self._angle(f, t, i)
        elif c in "&|;":
            self._control(f, t, i, c)
        elif c == "~" and f.word is None:
            m = _TILDE_RUN.match(t, i)
            raw = m.group() if m else "~"
            self._add(f, Part(TILDE, "", raw, False))
            src.pos = i + len(raw)
        else:
            m = _PLAIN.match(t, i)
            end = m.end() if m else i + 1
            self._lit(f, t[i:end], False)
            src.pos = end

    def _step_dquoted(self, f: _Frame, t: str, i: int, c: str) -> None:
        src = f.src
        if c == '"':
            f.in_dq = False
            src.pos = i + 1
        elif c == "\\":
            nxt = t[i + 1 : i + 2]
            if nxt == "\n":
                src.pos = i + 2
            elif nxt and nxt in '$`"\\':
                self._lit(f, nxt, True)
                src.pos = i + 2
            else:
                self._lit(f, "\\", True)
                src.pos = i + 1
        elif c == "$":
            self._dollar(f, quoted=True)
        elif c == "`":
            self._backtick(f, quoted=True)
        else:
            m = _DQ_RUN.match(t, i)
            end = m.end() if m else i + 1
            self._lit(f, t[i:end], True)
            src.pos = end

    def _angle(self, f: _Frame, t: str, i: int) -> None:
        src = f.src
        if t[i + 1 : i + 2] == "(":  # process substitution <(...) / >(...)
            src.pos = i + 2
            self._push_script(f, src, closer=True, raw=None)
            return
        m = _REDIR.match(t, i)
        op = m.group() if m else t[i]
        fd = None
        word = f.word
        if (
            word is not None
            and len(word) == 1
            and word[0].kind == LIT
            and not word[0].quoted
            and word[0].text.isdigit()
        ):
            fd = word[0].text
            f.word = None
            f.word_quoted = False
        self._finish_word(f)
        redirect = Redirect(op, fd)
        f.owner.tokens.append(redirect)
        f.target = redirect
        src.pos = i + len(op)

    def _control(self, f: _Frame, t: str, i: int, c: str) -> None:
        src = f.src
        two, three = t[i : i + 2], t[i : i + 3]
        if c == "&" and two == "&>":
            op = "&>>" if three == "&>>" else "&>"
            self._finish_word(f)
            redirect = Redirect(op, None)
            f.owner.tokens.append(redirect)
            f.target = redirect
            src.pos = i + len(op)
            return
        if c == ";":
            op = ";;&" if three == ";;&" else two if two in (";;", ";&") else ";"
        elif c == "&":
            op = "&&" if two == "&&" else "&"
        else:
            op = two if two in ("||", "|&") else "|"
        self._op(f, op)
        src.pos = i + len(op)

    # -- expansions --------------------------------------------------------------------------

    def _dollar(self, f: _Frame, *, quoted: bool) -> None:
        src = f.src
        t, i = src.text, src.pos
        nxt = t[i + 1 : i + 2]
        if nxt == "(":
            src.pos = i + 2
            self._push_script(f, src, closer=True, raw=None)
        elif nxt == "{":
            src.pos = i + 2
            self._push_param(f)
        elif nxt == "'" and not quoted:
            self._ansi_c(f, t, i)
        elif nxt == '"' and not quoted:
            src.pos = i + 1  # $"..." is a translated "..."
        else:
            m = _NAME.match(t, i + 1)
            if m:
                self._add(f, Part(VAR, m.group(), t[i : m.end()], quoted))
                src.pos = m.end()
            elif nxt and nxt in "0123456789@*#?$!-":
                self._add(f, Part(VAR, nxt, t[i : i + 2], quoted))
                src.pos = i + 2
            else:
                self._lit(f, "$", quoted)
                src.pos = i + 1

    def _ansi_c(self, f: _Frame, t: str, i: int) -> None:
        """``$'...'``: the escapes decoded, so ``$'\\x72m'`` is the word ``rm``."""
        j = i + 2
        while True:
            m = _ANSI_STOP.search(t, j)
            if m is None:
                f.owner.unbalanced = True
                end, close = len(t), len(t)
                break
            if m.group() == "\\":
                j = m.start() + 2
                continue
            end, close = m.start(), m.start() + 1
            break
        self._lit(f, ANSI_ESCAPE.sub(ansi_one, t[i + 2 : end]), True)
        f.src.pos = min(close, len(t))

    def _backtick(self, f: _Frame, *, quoted: bool) -> None:
        """`` `...` ``: the body is unescaped once, then scanned as a command list of its own."""
        src = f.src
        t, i = src.text, src.pos
        j = i + 1
        out: list[str] = []
        while True:
            m = _BACKTICK_STOP.search(t, j)
            if m is None:
                f.owner.unbalanced = True
                out.append(t[j:])
                end = len(t)
                break
            k = m.start()
            out.append(t[j:k])
            if m.group() == "\\":
                nxt = t[k + 1 : k + 2]
                if nxt in ("`", "\\", "$") or (quoted and nxt == '"'):
                    out.append(nxt)
                else:
                    out.append("\\" + nxt)
                j = k + 2
                continue
            end = k + 1
            break
        body = "".join(out)
        src.pos = end
        self.budget.charge(len(body))
        self._push_script(f, _Src(body), closer=False, raw=t[i:end])

    # -- here-documents ----------------------------------------------------------------------

    def _read_heredocs(self, f: _Frame) -> None:
        """After a newline: the bodies of the here-documents started on that line, in order."""
        if not f.pending:
            return
        src = f.src
        t, n = src.text, len(src.text)
        docs: list[str] = []
        for redirect in f.pending:
            delim = redirect.target.source() if redirect.target is not None else ""
            strip = redirect.op == "<<-"
            start = i = src.pos
            body_end = n
            while i < n:
                j = t.find("\n", i)
                line_end = n if j < 0 else j
                line = t[i:line_end]
                if (line.lstrip("\t") if strip else line) == delim:
                    body_end = i
                    i = min(line_end + 1, n)
                    break
                i = line_end + 1
            else:
                f.owner.unbalanced = True
                i = n
            redirect.heredoc = t[start:body_end]
            src.pos = min(i, n)
            self.budget.charge(src.pos - start)
            if redirect.expands and ("$" in redirect.heredoc or "`" in redirect.heredoc):
                docs.append(redirect.heredoc)
        f.pending = []
        for body in reversed(docs):
            frame = _Frame(_DOC, _Src(body), f.owner, closer=False, quoted_ctx=True)
            frame.in_dq = True
            self.stack.append(frame)

    def _step_doc(self, f: _Frame) -> None:
        """An expanded here-document: only its substitutions matter."""
        src = f.src
        t, i = src.text, src.pos
        if i >= len(t):
            self.stack.pop()
            return
        c = t[i]
        if c == "\\":
            src.pos = i + 2
        elif c == "$":
            self._dollar(f, quoted=True)
        elif c == "`":
            self._backtick(f, quoted=True)
        else:
            m = _DOC_RUN.match(t, i)
            src.pos = m.end() if m else i + 1

    # -- ${...} ------------------------------------------------------------------------------

    def _step_param(self, f: _Frame) -> None:
        src = f.src
        t, i = src.text, src.pos
        if i >= len(t):
            f.owner.unbalanced = True
            self._pop(f)
            return
        c = t[i]
        if f.in_dq:
            if c == '"':
                f.in_dq = False
                src.pos = i + 1
            elif c == "\\":
                self._lit(f, t[i + 1 : i + 2], True)
                src.pos = i + 2
            elif c == "$":
                self._dollar(f, quoted=True)
            elif c == "`":
                self._backtick(f, quoted=True)
            else:
                m = _PARAM_DQ_RUN.match(t, i)
                end = m.end() if m else i + 1
                self._lit(f, t[i:end], True)
                src.pos = end
            return
        if c == "}":
            src.pos = i + 1
            if f.depth == 0:
                self._pop(f)
                return
            f.depth -= 1
            self._lit(f, "}", False)
        elif c == "{":
            f.depth += 1
            self._lit(f, "{", False)
            src.pos = i + 1
        elif c == '"':
            f.in_dq = True
            src.pos = i + 1
        elif c == "'":
            j = t.find("'", i + 1)
            j = len(t) if j < 0 else j
            self._lit(f, t[i + 1 : j], True)
            src.pos = min(j + 1, len(t))
        elif c == "\\":
            self._lit(f, t[i + 1 : i + 2], True)
            src.pos = i + 2
        elif c == "$":
            self._dollar(f, quoted=False)
        elif c == "`":
            self._backtick(f, quoted=False)
        else:
            m = _PARAM_RUN.match(t, i)
            end = m.end() if m else i + 1
            self._lit(f, t[i:end], False)
            src.pos = end


def _param_part(frame: _Frame) -> Part:
    """The VAR part of a finished ``${...}``: its name and the default word, if any."""
    raw = frame.src.text[frame.start : frame.src.pos]
    body = "".join(p.text if p.kind == LIT else p.raw for p in frame.parts)
    scripts = tuple(s for p in frame.parts for s in p.scripts)
    m = _PARAM_BODY.match(body)
    name = ""
    defaults: tuple[str, ...] = ()
    if m:
        name = m.group(1)
        if m.group(2) in (":-", "-", ":=", "="):
            defaults = (m.group(3),)
    return Part(VAR, name, raw, frame.quoted_ctx, scripts, defaults)


def ansi_one(m: re.Match[str]) -> str:
    hex2, u4, u8, octal, ctrl, other = m.groups()
    if hex2 is not None:
        return chr(int(hex2, 16))
    if u4 is not None or u8 is not None:
        code = int(u4 or u8, 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
    if octal is not None:
        return chr(int(octal, 8) & 0xFF)
    if ctrl is not None:
        return chr(ord(ctrl) & 0x1F)
    return _ANSI_SIMPLE.get(other, "\\" + other)
