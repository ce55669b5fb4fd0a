"""Differential fuzzing: the C matcher must agree with the naive reference on every input."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeward._native import Glob
from reference_glob import reference_match

PATTERN_BYTES = st.sampled_from(
    [b"a", b"b", b"/", b"*", b"**", b"**/", b"\\", b"\\*", b":", b":*", b"."]
)
SUBJECT_BYTES = st.sampled_from([b"a", b"b", b"/", b"*", b"\\", b":", b".", b"A", b"\xc3\xa9"])

patterns = st.lists(PATTERN_BYTES, max_size=12).map(b"".join)
subjects = st.lists(SUBJECT_BYTES, max_size=24).map(b"".join)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, subject=subjects, tool_name=st.booleans())
def test_native_matches_reference(pattern: bytes, subject: bytes, tool_name: bool) -> None:
    expected = reference_match(pattern, subject, tool_name)
    assert Glob(pattern, tool_name=tool_name).match(subject) is expected


@settings(max_examples=300, deadline=None)
@given(pattern=patterns)
def test_pattern_matches_itself_with_stars_filled(pattern: bytes) -> None:
    """Replacing every wildcard by nothing yields a subject that must match."""
    subject = pattern.replace(b"\\*", b"\x00").replace(b"*", b"").replace(b"\x00", b"*")
    if pattern.endswith(b":*") or pattern == b"*":
        return
    assert Glob(pattern).match(subject) is reference_match(pattern, subject)


@pytest.mark.parametrize(
    ("pattern", "subject"),
    [
        (b"*a" * 40 + b"b", b"a" * 10_000),
        (b"**a" * 40 + b"b", b"a" * 65_536),
        (b"**/" * 200 + b"x", b"a/" * 30_000),
        (b"*" + b"a*" * 2000, b"a" * 1999),
    ],
    ids=["star-a", "globstar-a", "dirs-chain", "long-pattern"],
)
def test_pathological_patterns_do_not_match_and_terminate(pattern: bytes, subject: bytes) -> None:
    # Linear-time matching: these would take exponential time with naive backtracking.
    assert Glob(pattern).match(subject) is False


long_patterns = st.lists(PATTERN_BYTES, min_size=45, max_size=90).map(b"".join)
long_subjects = st.lists(SUBJECT_BYTES, min_size=0, max_size=160).map(b"".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=long_patterns, subject=long_subjects)
def test_multiword_patterns_match_reference(pattern: bytes, subject: bytes) -> None:
    """Patterns past 63 tokens take the multi-word path of the matcher."""
    assert Glob(pattern).match(subject) is reference_match(pattern, subject)


@settings(max_examples=400, deadline=None)
@given(pattern=long_patterns)
def test_multiword_patterns_match_their_own_expansion(pattern: bytes) -> None:
    subject = pattern.replace(b"\\*", b"\x00").replace(b"*", b"").replace(b"\x00", b"*")
    if pattern.endswith(b":*") or pattern == b"*":
        return
    assert Glob(pattern).match(subject) is reference_match(pattern, subject)


dfa_subjects = st.lists(SUBJECT_BYTES, min_size=260, max_size=400).map(b"".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=long_patterns, subject=dfa_subjects)
def test_lazy_dfa_matches_reference(pattern: bytes, subject: bytes) -> None:
    """Wide patterns against subjects of 256 bytes and more run on the lazy DFA."""
    assert Glob(pattern).match(subject) is reference_match(pattern, subject)


@pytest.mark.parametrize("stars", [64, 500, 2040])
def test_lazy_dfa_on_long_runs(stars: int) -> None:
    pattern = b"*a" * stars + b"*"
    assert Glob(pattern).match(b"a" * 65_536) is True
    assert Glob(pattern).match(b"a" * (stars - 1)) is False
    assert Glob(pattern + b"/b").match(b"a" * 65_536 + b"/b") is True


RUN_PIECES = st.sampled_from([b"a", b"b", b"ab", b"ba", b"/", b"a/", b"\\*", b"."])
RUN_SUBJECT_BYTES = st.sampled_from([b"a", b"b", b"ab", b"/", b"*", b"."])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(st.tuples(RUN_PIECES, st.booleans()), max_size=10),
    star=st.sampled_from([b"*", b"**"]),
    lead=st.booleans(),
    subject=st.lists(RUN_SUBJECT_BYTES, max_size=200).map(b"".join),
)
def test_star_only_and_globstar_only_patterns_match_reference(
    pieces: list[tuple[bytes, bool]], star: bytes, lead: bool, subject: bytes
) -> None:
    """Patterns whose wildcards are all `*` or all `**` are matched by literal runs, leftmost
    first (subjects of 256 bytes and more search them with memmem)."""
    pattern = (star if lead else b"") + b"".join(p + (star if w else b"") for p, w in pieces)
    assert Glob(pattern).match(subject) is reference_match(pattern, subject)
    filled = subject * 2 if len(subject) < 128 else subject
    assert Glob(pattern).match(filled) is reference_match(pattern, filled)


@pytest.mark.parametrize(
    "pattern", [b"*a" * 2047 + b"*", b"**a" * 1364 + b"**", b"*a" * 9, b"*a/" * 3 + b"*"]
)
def test_run_patterns_at_the_size_limit(pattern: bytes) -> None:
    subject = b"a" * 65_536 if b"/" not in pattern else b"a/" * 3 + b"a" * 60_000
    assert Glob(pattern).match(subject) is True
    assert Glob(pattern).match(subject[: pattern.count(b"a") - 1]) is False
