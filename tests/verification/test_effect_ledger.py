"""The mutation ledger and its effect digest."""

from __future__ import annotations

import hashlib
import random
import threading

import pytest

from codeward.tools import MutationRecorder
from codeward.verification import (
    EMPTY_EFFECT_DIGEST,
    LedgerEntry,
    LedgerError,
    MutationLedger,
    compute_effect_digest,
)

H1 = hashlib.sha256(b"one").hexdigest()
H2 = hashlib.sha256(b"two").hexdigest()
H3 = hashlib.sha256(b"three").hexdigest()


def test_empty_ledger_has_the_digest_of_nothing() -> None:
    ledger = MutationLedger()
    assert ledger.is_empty()
    assert len(ledger) == 0
    assert ledger.entries() == ()
    assert ledger.effect_digest() == EMPTY_EFFECT_DIGEST == hashlib.sha256(b"").hexdigest()


def test_digest_is_the_sha256_of_the_sorted_lines() -> None:
    ledger = MutationLedger()
    ledger.record("write", "src/b.py", H2)
    ledger.record("edit", "src/a.py", H1)
    ledger.record("bash", "build/out", "deleted")
    lines = sorted([f"write|src/b.py|{H2}", f"edit|src/a.py|{H1}", "bash|build/out|deleted"])
    expected = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    assert ledger.effect_digest() == expected
    assert not ledger.is_empty()


def test_digest_is_stable_under_reordering() -> None:
    records = [
        ("write", f"dir{i % 7}/file{i}.txt", hashlib.sha256(b"%d" % i).hexdigest())
        for i in range(200)
    ]
    digests = set()
    for seed in range(5):
        shuffled = records[:]
        random.Random(seed).shuffle(shuffled)
        ledger = MutationLedger()
        for record in shuffled:
            ledger.record(*record)
        digests.add(ledger.effect_digest())
    assert len(digests) == 1


def test_digest_changes_with_content_tool_and_path() -> None:
    def digest(*records: tuple[str, str, str]) -> str:
        ledger = MutationLedger()
        for record in records:
            ledger.record(*record)
        return ledger.effect_digest()

    base = digest(("write", "a.py", H1))
    assert digest(("write", "a.py", H2)) != base
    assert digest(("edit", "a.py", H1)) != base
    assert digest(("write", "b.py", H1)) != base
    assert digest(("write", "a.py", "deleted")) != base
    assert digest(("write", "a.py", H1)) == base


def test_one_entry_per_path_holds_the_last_change() -> None:
    ledger = MutationLedger()
    ledger.record("write", "a.py", H1)
    verified = ledger.effect_digest()
    ledger.record("edit", "a.py", H2)
    assert ledger.entries() == (LedgerEntry("edit", "a.py", H2),)
    assert ledger.effect_digest() != verified
    # putting back the verified state (same tool, same bytes) gives the verified digest back
    ledger.record("write", "a.py", H1)
    assert ledger.effect_digest() == verified
    ledger.clear()
    assert ledger.is_empty() and ledger.effect_digest() == EMPTY_EFFECT_DIGEST


def test_separators_in_paths_cannot_forge_lines() -> None:
    # a path holding "|H\nwrite|b" must not read as two entries
    forged = MutationLedger()
    forged.record("write", f"a|{H1}\nwrite|b", H2)
    honest = MutationLedger()
    honest.record("write", "a", H1)
    honest.record("write", "b", H2)
    assert forged.effect_digest() != honest.effect_digest()
    (entry,) = forged.entries()
    assert entry.canonical_line() == f"write|a%7C{H1}%0Awrite%7Cb|{H2}".encode()
    percent = LedgerEntry("write", "100%.txt", H1).canonical_line()
    assert percent == f"write|100%25.txt|{H1}".encode()


def test_non_utf8_and_unicode_paths() -> None:
    ledger = MutationLedger()
    ledger.record("bash", "caf\u00e9/\udcff.bin", H1)  # surrogateescape'd byte 0xff
    (entry,) = ledger.entries()
    assert entry.canonical_line() == b"bash|caf\xc3\xa9/\xff.bin|" + H1.encode()
    assert compute_effect_digest(ledger.entries()) == ledger.effect_digest()


@pytest.mark.parametrize(
    ("tool", "path", "digest"),
    [
        ("", "a", H1),
        ("wr|ite", "a", H1),
        ("write\n", "a", H1),
        (None, "a", H1),
        ("write", "", H1),
        ("write", "/etc/passwd", H1),
        ("write", "../a", H1),
        ("write", "a/../b", H1),
        ("write", "./a", H1),
        ("write", "a//b", H1),
        ("write", "a/", H1),
        ("write", "a\0b", H1),
        ("write", b"a", H1),
        ("write", "a", H1.upper()),
        ("write", "a", H1[:-1]),
        ("write", "a", "sha256:" + H1),
        ("write", "a", "Deleted"),
        ("write", "a", "dir:755"),
        ("write", "a", ""),
    ],
)
def test_malformed_records_are_refused(tool: object, path: object, digest: object) -> None:
    ledger = MutationLedger()
    with pytest.raises(LedgerError) as info:
        ledger.record(tool, path, digest)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)
    assert ledger.is_empty()


def test_every_digest_form_is_accepted() -> None:
    ledger = MutationLedger()
    for i, digest in enumerate(
        [
            H1,
            "exec:" + H1,
            "file:0644:" + H1,
            "file:4755:" + H1,
            "symlink:" + H1,
            "meta:" + H1,
            "dir:0755",
            "deleted",
        ]
    ):
        ledger.record("bash", f"p{i}", digest)
    ledger.record("mcp__server__tool", ".", "meta:" + H2)
    assert len(ledger) == 9
    for bad in ("file:644:" + H1, "file:0844:" + H1, "file:0644" + H1, "file:0644:"):
        with pytest.raises(LedgerError):
            ledger.record("bash", "q", bad)


def test_it_is_a_mutation_recorder() -> None:
    recorder: MutationRecorder = MutationLedger()
    recorder.record("write", "a", H1)


def test_concurrent_records_lose_nothing() -> None:
    ledger = MutationLedger()
    digests: list[str] = []

    def work(n: int) -> None:
        for i in range(300):
            ledger.record("write", f"t{n}/f{i}", H3)
            if i % 50 == 0:
                digests.append(ledger.effect_digest())

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ledger) == 1800
    expected = MutationLedger()
    for n in range(6):
        for i in range(300):
            expected.record("write", f"t{n}/f{i}", H3)
    assert ledger.effect_digest() == expected.effect_digest()
    assert all(len(d) == 64 for d in digests)
