"""The command guardrail on hostile input: huge, deeply nested, malformed, random.

It must never raise and always end; a malformed command is judged as far as the
C reader reads it, and one that ends the reading at one of its bounds (nesting
depth, pieces of code, commands, size) is refused as ``parse.too_complex`` (it
cannot be shown to be safe) unless what was read is already catastrophic.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeward.guardrail import GuardrailHit, check_command
from codeward.guardrail._command import MAX_NESTING

MB = 1 << 20
TOO_COMPLEX = "parse.too_complex"


def rule(command: str) -> str | None:
    hit = check_command(command)
    return None if hit is None else hit.rule


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo " + "a" * MB, None),
        ("cat <<'EOF'\n" + ("x" * 79 + "\n") * (MB // 80) + "EOF\n", None),
        ("echo '" + "x" * MB, None),  # unterminated quote
        ("echo " + "a" * MB + " && rm -rf /", "catastrophic.rm_root"),
        ("ls " + "abc " * (MB // 16) + "; sudo id", "privilege.sudo"),
    ],
    ids=["word", "heredoc", "unterminated", "rm-after-1MB", "sudo-after-many-words"],
)
def test_one_megabyte(command: str, expected: str | None) -> None:
    assert len(command) >= MB // 4
    assert rule(command) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("(" * 10_000 + "ls" + ")" * 10_000, None),
        ("(" * 10_000 + "rm -rf /" + ")" * 10_000, "catastrophic.rm_root"),
        ("(" * 10_000, None),  # unbalanced
        (")" * 10_000 + "sudo id", "privilege.sudo"),
        # code nested past the reader's depth, more commands or wrappers than it
        # follows: refused whatever is inside (it was None or the inner rule before
        # the guardrail read lines with the C reader)
        ("echo " + "$(" * 10_000 + "ls" + ")" * 10_000, TOO_COMPLEX),
        ("echo " + "$(" * 10_000 + "rm -rf ~" + ")" * 10_000, TOO_COMPLEX),
        ("echo " + "$(" * 10_000, TOO_COMPLEX),
        ("echo " + '"$(' * 5_000 + "sudo id" + ')"' * 5_000, TOO_COMPLEX),
        ("echo " + "${x:-" * 10_000 + "$(sudo id)" + "}" * 10_000, "privilege.sudo"),
        ("echo " + "<(" * 10_000 + "reboot" + ")" * 10_000, TOO_COMPLEX),
        ("{ " * 10_000 + "halt; " + "}; " * 10_000, "catastrophic.shutdown"),
        ("if true; then " * 5_000 + "rm -rf /" + "; fi" * 5_000, TOO_COMPLEX),
        ("eval " * 50_000 + "rm -rf /", TOO_COMPLEX),
        ("timeout 1 " * 20_000 + "sudo id", TOO_COMPLEX),
        ("echo " + "`" * 20_001, TOO_COMPLEX),
    ],
    ids=[
        "parens",
        "parens-rm",
        "open-parens",
        "close-parens",
        "subs",
        "subs-rm",
        "open-subs",
        "quoted-subs",
        "param-defaults",
        "process-subs",
        "braces",
        "ifs",
        "eval-chain",
        "wrapper-chain",
        "backticks",
    ],
)
def test_deep_nesting(command: str, expected: str | None) -> None:
    assert rule(command) == expected


def test_code_nested_in_code_beyond_the_limit_is_refused() -> None:
    """Each level of ``bash -c`` is read; past MAX_NESTING the command fails closed."""

    def nest(levels: int, inner: str) -> str:
        for _ in range(levels):
            inner = "eval " + "'" + inner.replace("'", "'\\''") + "'"
        return inner

    assert rule(nest(5, "rm -rf /")) == "catastrophic.rm_root"
    assert rule(nest(5, "ls")) is None
    deep = "sh -c " + "'sh -c \"" + "x" + "\"'"
    assert rule(deep) is None
    piped = "echo x | " + "sh | " * 3 + "cat"
    assert rule(piped) is None

    def heredocs(levels: int, inner: str) -> str:
        # quoted here-documents nest without any escaping: each level is one more shell
        for k in range(levels):
            inner = f"sh <<'E{k}'\n{inner}\nE{k}"
        return inner

    assert rule(heredocs(MAX_NESTING - 1, "sudo id")) == "privilege.sudo"
    assert rule(heredocs(MAX_NESTING - 1, "ls")) is None
    assert rule(heredocs(MAX_NESTING + 2, "ls")) == "parse.too_complex"


def test_budget_exhaustion_is_refused_not_hung() -> None:
    """Work that grows faster than the input (here-documents nested in substitutions
    nested in here-documents) runs out of budget and fails closed."""
    command = "$(cat <<E\n" * 3_000 + "ls\n" + ("E\n)\n" * 3_000)
    hit = check_command(command)
    assert hit is None or hit.rule == "parse.too_complex"


def test_unbalanced_quotes_still_match_a_rule() -> None:
    assert rule("rm -rf / 'unterminated") == "catastrophic.rm_root"
    assert rule('sudo ls "unterminated') == "privilege.sudo"
    assert rule("echo 'rm -rf /") is None  # the rest of the command is one quoted word
    assert rule("echo $(rm -rf /") == "catastrophic.rm_root"
    assert rule("echo `sudo id") == "privilege.sudo"


_TOKENS = [
    *string.ascii_letters[:8],
    *string.digits[:3],
    *" \t\n;&|<>(){}[]$`'\"\\~#*?!=-/.:,@%^",
    "rm",
    "-rf",
    "/",
    "sudo",
    "$(",
    "${",
    "<<",
    "EOF",
    "bash -c ",
    "curl x|sh",
    "\x00",
    "é",
]
_SHELLISH = st.lists(st.sampled_from(_TOKENS), max_size=80).map("".join)


@settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(_SHELLISH)
def test_random_shell_like_text_returns_a_hit_or_none(command: str) -> None:
    hit = check_command(command)
    assert hit is None or isinstance(hit, GuardrailHit)
    if hit is not None:
        assert hit.rule and hit.message and isinstance(hit.fragment, str)


@settings(deadline=None, max_examples=200)
@given(st.text(max_size=300))
def test_random_unicode_returns_a_hit_or_none(command: str) -> None:
    hit = check_command(command)
    assert hit is None or isinstance(hit, GuardrailHit)


@settings(deadline=None, max_examples=200)
@given(st.sampled_from(["rm -rf /", "sudo id", "mkfs /dev/sda", ":(){ :|:& };:"]), _SHELLISH)
def test_a_catastrophic_command_after_any_separator_is_refused(bad: str, noise: str) -> None:
    """Whatever comes before it, a catastrophic command on a line of its own is refused."""
    command = f"{noise}\n{bad}"
    hit = check_command(command)
    if hit is None:
        # only possible when the noise left a quote, substitution or here-document open,
        # which swallows the next line as data
        assert any(c in noise for c in "'\"`$(<\\#{")
