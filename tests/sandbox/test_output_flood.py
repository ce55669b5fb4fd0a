"""Hostile output: floods must leave the caller with a bounded, exact summary.

Per stream the result keeps the first max//2 and the last max - max//2 bytes
around the marker "\\n[... a3s: N bytes omitted ...]\\n"; total_bytes counts
every byte of both streams; truncated says that something was dropped. The
content is periodic with a prefix and a suffix, so the expected head and
tail are computed exactly without holding 100 MB in the test. The peak RSS
of the test process (VmHWM, reset through /proc/self/clear_refs) must not
grow by more than 64 MiB while 100-200 MB go through it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from codeward.sandbox import NativeBashSandbox, select_sandbox

MiB = 1 << 20
N = 100 * MiB
DEFAULT_MAX = 102_400
SMALL_MAX = 1_001  # odd on purpose: head 500, tail 501
RSS_BOUND = 64 * MiB


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    ws = tmp_path_factory.mktemp("flood")
    sb = select_sandbox(ws)
    assert isinstance(sb, NativeBashSandbox), f"the native boundary is unavailable here: {sb!r}"
    return sb


# ---- expected content ----------------------------------------------------------


class Stream:
    """prefix + the first n bytes of unit repeated forever + suffix."""

    def __init__(self, prefix: bytes, unit: bytes, n: int, suffix: bytes, strip_nl: bool) -> None:
        self.prefix, self.unit, self.n, self.suffix = prefix, unit, n, suffix
        self.strip_nl = strip_nl

    @property
    def total(self) -> int:
        return len(self.prefix) + self.n + len(self.suffix)

    def _body(self, start: int, end: int) -> bytes:
        k = len(self.unit)
        s = start % k
        return (self.unit * ((end - start) // k + 2))[s : s + (end - start)]

    def head(self, h: int) -> bytes:
        return (self.prefix + self._body(0, min(h, self.n)) + self.suffix)[:h]

    def tail(self, t: int) -> bytes:
        return (self.prefix + self._body(max(0, self.n - t), self.n) + self.suffix)[-t:]

    def shell(self) -> str:
        """A bash command writing exactly this stream to stdout."""

        def ansi_c(data: bytes) -> str:
            return "$'" + "".join(f"\\x{b:02x}" for b in data) + "'"

        gen = f"yes {ansi_c(self.unit.rstrip(bytes([10])))}"
        if self.strip_nl:
            gen += " | tr -d '\\n'"
        return (
            f"{{ printf '%s' {ansi_c(self.prefix)}; {gen} | head -c {self.n}; "
            f"printf '%s' {ansi_c(self.suffix)}; }}"
        )

    def expected(self, cap: int) -> str:
        if self.total <= cap:
            whole = self.head(self.total)
            return whole.decode("utf-8", "replace")
        h, t = cap // 2, cap - cap // 2
        marker = f"\n[... a3s: {self.total - cap} bytes omitted ...]\n".encode()
        return (self.head(h) + marker + self.tail(t)).decode("utf-8", "replace")


def lines_stream(n_total: int, tag: bytes = b"OUT") -> Stream:
    prefix, suffix = b"BEGIN-" + tag + b"\n", b"\nEND-" + tag + b"\n"
    unit = b"0123456789abcdefghijklmnopqrstuvwxyz-" + tag + b"\n"
    return Stream(prefix, unit, n_total - len(prefix) - len(suffix), suffix, strip_nl=False)


def no_newline_stream(n_total: int) -> Stream:
    prefix, suffix = b"<<", b">>"
    return Stream(prefix, b"0123456789", n_total - 4, suffix, strip_nl=True)


def invalid_utf8_stream(n_total: int) -> Stream:
    prefix, suffix = b"<<", b">>"
    return Stream(prefix, b"\xff\xfe\xc3\x80\xe2\x82", n_total - 4, suffix, strip_nl=True)


# ---- memory ---------------------------------------------------------------------


def _status_kib(field: str) -> int:
    m = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    assert m, field
    return int(m.group(1)) * 1024


class PeakRss:
    """Peak RSS growth of this process over a block (VmHWM reset via clear_refs)."""

    def __enter__(self):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        self.base = _status_kib("VmRSS")
        return self

    def __exit__(self, *exc):
        self.growth = _status_kib("VmHWM") - self.base
        return False


def _check(out, streams: dict[str, Stream], cap: int) -> None:
    assert out.exit_code == 0 and not out.timed_out, (out.exit_code, out.stderr[-300:])
    total = sum(s.total for s in streams.values())
    assert out.total_bytes == total, f"total_bytes {out.total_bytes} != {total}"
    assert out.truncated == any(s.total > cap for s in streams.values())
    for name, s in streams.items():
        got = getattr(out, name)
        want = s.expected(cap)
        assert len(got) == len(want), f"{name}: {len(got)} chars kept, expected {len(want)}"
        assert got == want, f"{name}: head/tail content differs"


CAPS = [pytest.param(DEFAULT_MAX, id="default-cap"), pytest.param(SMALL_MAX, id="small-cap")]


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize(
    "kind", ["stdout-lines", "stdout-no-newline", "stdout-invalid-utf8", "both-streams"]
)
def test_100mb_flood_is_bounded_and_exact(sandbox, kind, cap) -> None:
    if kind == "both-streams":
        streams = {"stdout": lines_stream(N, b"OUT"), "stderr": invalid_utf8_stream(N)}
        command = f"{streams['stdout'].shell()} & {streams['stderr'].shell()} >&2; wait"
    else:
        make = {
            "stdout-lines": lines_stream,
            "stdout-no-newline": no_newline_stream,
            "stdout-invalid-utf8": invalid_utf8_stream,
        }[kind]
        streams = {"stdout": make(N), "stderr": Stream(b"", b"x", 0, b"", True)}
        command = streams["stdout"].shell()
    with PeakRss() as rss:
        out = sandbox.exec(command, timeout_ms=60_000, max_output_bytes=cap)
        _check(out, streams, cap)
    assert rss.growth < RSS_BOUND, f"the caller's peak RSS grew by {rss.growth / MiB:.1f} MiB"
    if kind == "stdout-invalid-utf8":
        assert "\ufffd" in out.stdout and out.stdout.startswith("<<")
        assert out.stdout.endswith(">>")


@pytest.mark.parametrize("extra", [0, 1], ids=["exactly-the-cap", "one-byte-over"])
def test_output_at_the_cap_boundary(sandbox, extra) -> None:
    streams = {
        "stdout": lines_stream(SMALL_MAX + extra, b"O"),
        "stderr": no_newline_stream(SMALL_MAX + extra),
    }
    command = f"{streams['stdout'].shell()}; {streams['stderr'].shell()} >&2"
    out = sandbox.exec(command, timeout_ms=20_000, max_output_bytes=SMALL_MAX)
    _check(out, streams, SMALL_MAX)
    if extra:
        assert "[... a3s: 1 bytes omitted ...]" in out.stdout
    else:
        assert "omitted" not in out.stdout and not out.truncated


def test_endless_flood_until_timeout_stays_bounded(sandbox) -> None:
    with PeakRss() as rss:
        out = sandbox.exec("yes flood & yes FLOOD >&2", timeout_ms=1_500, max_output_bytes=4_096)
    assert out.timed_out and out.exit_code == 124, out.exit_code
    assert out.truncated
    assert out.total_bytes > 10 * MiB, f"only {out.total_bytes} bytes were drained"
    marker_room = 64
    assert len(out.stdout) <= 4_096 + marker_room and len(out.stderr) <= 4_096 + marker_room
    assert out.stdout.startswith("flood\nflood\n") and out.stderr.startswith("FLOOD\n")
    assert rss.growth < RSS_BOUND, f"the caller's peak RSS grew by {rss.growth / MiB:.1f} MiB"


def test_flood_from_an_orphaned_descendant_does_not_hold_exec(sandbox) -> None:
    t0 = time.monotonic()
    with PeakRss() as rss:
        out = sandbox.exec(
            "( yes orphan-flood & ) ; ( yes orphan-err >&2 & ) ; sleep 0.3; echo main-done >&2",
            timeout_ms=30_000,
            max_output_bytes=2_048,
        )
    assert time.monotonic() - t0 < 5, "an orphaned flooder kept exec waiting"
    assert out.exit_code == 0 and not out.timed_out, out.exit_code
    assert out.truncated and out.stdout.startswith("orphan-flood\n")
    assert rss.growth < RSS_BOUND
