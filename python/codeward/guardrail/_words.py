"""What a word may stand for: its candidate values under the variables a command set.

The guardrail does not run anything, so a value is a guess. A variable that
the command assigned (``d=/; rm -rf $d``), a ``for`` loop's list or a
``${x:-default}`` gives candidates; anything else stays as written
(``$HOME``, ``~``), so the rules can still recognise it. A command
substitution's output is unknown, unless it only echoes literal words
(``$(echo rm)``): it shows as :data:`SUB_MARK` in names and arguments, and
as its source in code handed to another shell.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

from ._shell import ANSI_ESCAPE, LIT, SUB, VAR, Part, Script, Word, ansi_one

__all__ = [
    "SUB_MARK",
    "Env",
    "arg_texts",
    "command_name",
    "echoed",
    "expand",
    "first",
    "has_unknown",
    "literal_word",
    "printed",
    "splits",
]

Env = Mapping[str, Sequence[str]]
SUB_MARK = "$(…)"
MAX_CANDIDATES = 16
_MAX_BRANCHING_PARTS = 256
_MAX_BRACE_TEXT = 512
MAX_VALUE = 4096  # a variable's value longer than this is unknown (x=$x$x doubles it)
_MAX_WORD = 1 << 16  # past this, expansions stay as written


def expand(word: Word, env: Env, *, subs_raw: bool = False, braces: bool = True) -> list[str]:
    """The word's candidate values (at least one, at most MAX_CANDIDATES).

    Brace expansion (``/{usr,etc}``) adds its words as candidates too: a rule
    that pools candidates sees each of them.
    """
    parts = word.parts
    if len(parts) == 1 and parts[0].kind == LIT and (parts[0].quoted or "{" not in parts[0].text):
        return [parts[0].text]  # the common case: one plain word
    results: list[list[str]] = [[]]
    branch = len(parts) <= _MAX_BRANCHING_PARTS
    unquoted_brace = False
    size = 0
    for part in parts:
        if part.kind == LIT:
            opts: Sequence[str] = (part.text,)
            unquoted_brace = unquoted_brace or _unquoted_brace(part)
        elif part.kind == VAR:
            known = env.get(part.text) if size < _MAX_WORD else None
            opts = (*known, *part.defaults) if known else (part.raw, *part.defaults)
        elif part.kind == SUB:
            static = None if subs_raw else _static_output(part)
            opts = (part.raw if subs_raw else SUB_MARK if static is None else static,)
        else:  # a tilde
            opts = (part.raw,)
        size += len(opts[0])
        if len(opts) == 1 or not branch or len(results) >= MAX_CANDIDATES:
            for r in results:
                r.append(opts[0])
        else:
            results = [[*r, o] for r in results for o in opts][:MAX_CANDIDATES]
    texts = ["".join(r) for r in results]
    if unquoted_brace and braces:
        texts = [e for t in texts for e in _braces(t)][:MAX_CANDIDATES]
    return texts


def first(word: Word, env: Env) -> str:
    """The first candidate: good enough to read an option."""
    return expand(word, env)[0]


def has_unknown(words: Iterable[Word], env: Env) -> bool:
    """Whether any word holds an expansion whose value is unknown (it may be an option)."""
    return any(
        (p.kind == SUB and _static_output(p) is None) or (p.kind == VAR and not env.get(p.text))
        for w in words
        for p in w.parts
    )


def arg_texts(words: Iterable[Word], env: Env) -> list[str]:
    """All candidate values of ``words``, split where an unquoted expansion would split."""
    out: list[str] = []
    for w in words:
        split = any(p.kind != LIT and not p.quoted for p in w.parts)
        for text in expand(w, env):
            if split and text != SUB_MARK:
                out.extend(text.split() or [""])
            else:
                out.append(text)
    return out


def splits(word: Word, env: Env) -> list[str]:
    """The words bash would make of ``word``'s first value: brace expansion, then splitting
    of unquoted expansions (``{rm,-rf,/}`` and ``$(echo rm -rf /)`` are three words)."""
    parts = word.parts
    if len(parts) == 1 and parts[0].kind == LIT and (parts[0].quoted or "{" not in parts[0].text):
        return [parts[0].text]
    text = expand(word, env, braces=False)[0]
    pieces = _braces(text) if any(_unquoted_brace(p) for p in word.parts) else [text]
    if any(p.kind != LIT and not p.quoted for p in word.parts):
        pieces = [w for piece in pieces for w in piece.split()]
    return pieces


def literal_word(text: str) -> Word:
    """A word that is exactly ``text`` (quoted, so it is not expanded again)."""
    return Word([Part(LIT, text, "", True)], True)


def command_name(text: str) -> str:
    """``/usr/bin/RM`` -> ``rm``: the basename, case-folded (case-insensitive file systems)."""
    return posixpath.basename(text).casefold()


def _unquoted_brace(part: Part) -> bool:
    return part.kind == LIT and not part.quoted and "{" in part.text


def _static_output(part: Part) -> str | None:
    """What ``$(echo a b)`` / ``$(printf a)`` prints, when it only echoes literal words, the
    name ``$(which sudo)`` / ``$(command -v sudo)`` / ``$(type -P sudo)`` looks up, and
    ``$(pwd)``, which is ``$PWD``."""
    if len(part.scripts) != 1:
        return None
    script: Script = part.scripts[0]
    if script.children or len(script.tokens) > 64:
        return None
    words: list[str] = []
    for tok in script.tokens:
        if tok == "\n":
            continue
        if not isinstance(tok, Word):
            return None
        text = tok.literal()
        if text is None:
            return None
        words.append(text)
    if not words:
        return None
    if words[0] == "pwd" and all(w in ("-L", "-P") for w in words[1:]):
        return "$PWD"  # the working directory: `$(pwd)/..` is `$PWD/..`
    if words[0] in _LOOKUPS:
        names = [w for w in words[1:] if not w.startswith("-")]
        return names[0] if len(names) == 1 and _looks_up(words) else None
    if words[0] == "printf":
        return printed(words[1:])
    if words[0] != "echo":
        return None
    return echoed(words[1:])


_LOOKUPS = frozenset({"which", "command", "type", "whence", "where"})


def _looks_up(words: list[str]) -> bool:
    """``which X``, ``command -v X``, ``type -P X``: the output is where program X is."""
    options = [w for w in words[1:] if w.startswith("-")]
    if words[0] == "command":
        return any("v" in o or "V" in o for o in options)
    if words[0] == "type":
        return any("p" in o.lower() for o in options)
    return True


def echoed(words: Sequence[str]) -> str:
    """What ``echo WORDS`` prints (``-e`` escapes decoded); without ``-e`` a ``\\n`` is still
    read as a line break, as ``sh`` (dash) would print it."""
    decode = False
    i = 0
    while i < len(words) and words[i] in ("-n", "-e", "-E", "-ne", "-en"):
        decode = decode or "e" in words[i][1:]
        i += 1
    text = " ".join(words[i:])
    return _unescape(text) if decode else text.replace("\\n", "\n")


def printed(words: Sequence[str]) -> str:
    """What ``printf FORMAT ARGS`` prints: the format's escapes decoded (``\\x72\\x6d`` is
    ``rm``) and ``%s``/``%b`` (escapes decoded)/``%d``... filled with the arguments."""
    if words[:1] == ["--"]:
        words = words[1:]
    if not words or words[0].startswith("-v"):
        return ""  # printf -v NAME assigns a variable instead of printing
    args = list(words[1:])

    def fill(m: re.Match[str]) -> str:
        if m.group() == "%%":
            return "%"
        value = args.pop(0) if args else ""
        return _unescape(value) if m.group().endswith("b") else value

    text = _DIRECTIVE.sub(fill, _unescape(words[0]))
    return " ".join([text, *args]) if args else text


_DIRECTIVE = re.compile(r"%%|%[-+ #0]*[0-9*]*(?:\.[0-9*]*)?[a-zA-Z]")


def _unescape(text: str) -> str:
    return ANSI_ESCAPE.sub(ansi_one, text)


def _braces(text: str) -> list[str]:
    """Bash brace expansion of ``a{b,c}d`` (bounded); other text is returned as is."""
    if len(text) > _MAX_BRACE_TEXT or "," not in text:
        return [text]
    out: list[str] = []
    work = [text]
    while work and len(out) < MAX_CANDIDATES:
        t = work.pop()
        span = _brace_span(t)
        if span is None:
            out.append(t)
            continue
        start, end, alternatives = span
        for alt in reversed(alternatives):
            work.append(t[:start] + alt + t[end + 1 :])
        if len(work) > 4 * MAX_CANDIDATES:
            break
    out.extend(work)
    return out[:MAX_CANDIDATES] or [text]


_BRACE_SCAN = re.compile(r"[{},]")


def _brace_span(text: str) -> tuple[int, int, list[str]] | None:
    """The first ``{...}`` holding a top-level comma: (open index, close index, alternatives)."""
    opens: list[tuple[int, list[int]]] = []
    for m in _BRACE_SCAN.finditer(text):
        ch, i = m.group(), m.start()
        if ch == "{":
            opens.append((i, []))
        elif ch == "," and opens:
            opens[-1][1].append(i)
        elif ch == "}" and opens:
            start, commas = opens.pop()
            if commas:
                bounds = [start, *commas, i]
                return start, i, [text[a + 1 : b] for a, b in itertools.pairwise(bounds)]
    return None
