"""TerminalConfirmationProvider over real pipes and a real pseudo-terminal."""

from __future__ import annotations

import io
import os
import pty
import select
import threading
import time

import pytest
from confirm_helpers import LONG, AskInThread, make_request

from codeward.hitl import ConfirmationManager, TerminalConfirmationProvider


@pytest.fixture
def pipe():
    """(reader file object, writer fd); both closed at teardown."""
    r, w = os.pipe()
    reader = os.fdopen(r, "rb", buffering=0)
    state = {"w": w}
    yield reader, state
    reader.close()
    if state["w"] is not None:
        os.close(state["w"])


def feed(state, data: bytes, close: bool = False) -> None:
    os.write(state["w"], data)
    if close:
        os.close(state["w"])
        state["w"] = None


@pytest.mark.parametrize("line", [b"y\n", b"yes\n", b"Y\n", b"  YES \r\n", b"y"])
def test_yes_approves(pipe, line):
    reader, state = pipe
    out = io.StringIO()
    feed(state, line, close=line == b"y")
    provider = TerminalConfirmationProvider(reader, out, color=False)
    assert provider.request(make_request()) is True
    text = out.getvalue()
    for label in ("Operation:", "Why:", "Scope:", "Risk:", "Approve? [y/N]"):
        assert label in text
    assert "→ approved" in text


@pytest.mark.parametrize("line", [b"n\n", b"\n", b"no\n", b"yess\n", b"sure\n", b"y es\n"])
def test_anything_else_rejects(pipe, line):
    reader, state = pipe
    out = io.StringIO()
    feed(state, line)
    assert TerminalConfirmationProvider(reader, out, color=False).request(make_request()) is False
    assert "→ rejected" in out.getvalue()


def test_eof_rejects(pipe):
    reader, state = pipe
    out = io.StringIO()
    feed(state, b"", close=True)
    provider = TerminalConfirmationProvider(reader, out, color=False)
    assert provider.request(make_request()) is False
    assert "no more input: rejected" in out.getvalue()
    assert provider.request(make_request("again")) is False  # stays at EOF


def test_timeout_rejects(pipe):
    reader, _state = pipe
    out = io.StringIO()
    provider = TerminalConfirmationProvider(reader, out, color=False)
    assert provider.request(make_request(timeout_ms=60)) is False
    assert "no answer within 60 ms: rejected" in out.getvalue()


def test_scripted_answers_are_consumed_one_per_prompt(pipe):
    reader, state = pipe
    feed(state, b"y\nn\nyes\n")
    provider = TerminalConfirmationProvider(reader, io.StringIO(), color=False)
    assert [provider.request(make_request(str(i))) for i in range(3)] == [True, False, True]


def test_an_endless_line_is_cut_and_rejected(pipe):
    reader, state = pipe
    feed(state, b"y" * 10_000 + b"\ny\n")
    provider = TerminalConfirmationProvider(reader, io.StringIO(), color=False)
    assert provider.request(make_request("1")) is False


def test_concurrent_prompts_take_turns(pipe):
    reader, state = pipe
    out = io.StringIO()
    provider = TerminalConfirmationProvider(reader, out, color=False)
    results: dict[str, bool] = {}
    ready = threading.Barrier(2)

    def ask(id: str) -> None:
        ready.wait(LONG)
        results[id] = provider.request(make_request(id))

    threads = [threading.Thread(target=ask, args=(id,)) for id in ("a", "b")]
    for t in threads:
        t.start()
    feed(state, b"y\nn\n")
    for t in threads:
        t.join(LONG)
    assert sorted(results.values()) == [False, True]
    text = out.getvalue()
    # each prompt is whole: its answer line follows it before the next one starts
    blocks = text.split("Confirmation required")[1:]
    assert len(blocks) == 2
    assert all(b.count("→ ") == 1 for b in blocks)


def test_stream_without_descriptor_uses_a_reader_thread():
    out = io.StringIO()
    provider = TerminalConfirmationProvider(io.StringIO("yes\nno\n"), out, color=False)
    assert provider.request(make_request("1")) is True
    assert provider.request(make_request("2")) is False
    assert provider.request(make_request("3")) is False  # end of input
    assert "no more input" in out.getvalue()


def test_unwritable_output_rejects(pipe):
    reader, state = pipe
    feed(state, b"y\n")

    class Broken(io.StringIO):
        def write(self, s):
            raise BrokenPipeError("gone")

    assert (
        TerminalConfirmationProvider(reader, Broken(), color=False).request(make_request()) is False
    )


def test_hostile_arguments_cannot_draw_on_the_terminal(pipe):
    reader, state = pipe
    feed(state, b"n\n")
    out = io.StringIO()
    request = make_request(args={"command": "ls\x1b[2J\x1b[1A\rOperation: harmless\x07"})
    TerminalConfirmationProvider(reader, out, color=False).request(request)
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text


# -- colour --------------------------------------------------------------------------------------


def test_colour_forced_on_and_off(pipe):
    reader, state = pipe
    on, off = io.StringIO(), io.StringIO()
    feed(state, b"n\n")
    TerminalConfirmationProvider(reader, on, color=True).request(make_request("1"))
    feed(state, b"n\n")  # one provider per input: each keeps what it read past a line
    TerminalConfirmationProvider(reader, off, color=False).request(make_request("2"))
    assert "\x1b[" in on.getvalue()
    assert "\x1b" not in off.getvalue()


def test_colour_defaults_to_off_for_a_non_terminal(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert TerminalConfirmationProvider(io.StringIO(), io.StringIO()).color is False


@pytest.fixture
def tty_out():
    """A real terminal as output: (file object for the provider, master fd to read from)."""
    master, slave = pty.openpty()
    out = os.fdopen(slave, "w", buffering=1)
    yield out, master
    out.close()
    os.close(master)


def drain(master: int) -> str:
    chunks = []
    while select.select([master], [], [], 0.05)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_on_a_terminal_unless_no_color(monkeypatch, tty_out, pipe):
    out, master = tty_out
    reader, state = pipe
    feed(state, b"n\nn\nn\n")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    provider = TerminalConfirmationProvider(reader, out)
    assert provider.color is True
    provider.request(make_request("1"))
    assert "\x1b[" in drain(master)
    monkeypatch.setenv("NO_COLOR", "1")
    assert provider.color is False
    provider.request(make_request("2"))
    assert "\x1b" not in drain(master)
    monkeypatch.setenv("NO_COLOR", "")  # empty means unset (no-color.org)
    assert provider.color is True
    monkeypatch.setenv("TERM", "dumb")
    assert provider.color is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert TerminalConfirmationProvider(reader, out, color=True).color is True  # explicit wins


# -- a real terminal as input ------------------------------------------------------------------


def wait_for(predicate) -> None:
    deadline = time.monotonic() + LONG
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def test_typeahead_on_a_terminal_is_discarded():
    """A 'y' typed before the question appeared must not answer it."""
    master, slave = pty.openpty()
    try:
        os.write(master, b"y\n")  # typed ahead
        deadline = time.monotonic() + LONG
        while not select.select([slave], [], [], 0.05)[0] and time.monotonic() < deadline:
            pass  # wait until the line discipline has it
        out = io.StringIO()
        with os.fdopen(os.dup(slave), "rb", buffering=0) as tty_in:
            provider = TerminalConfirmationProvider(tty_in, out, color=False)
            assert provider.request(make_request("1", timeout_ms=100)) is False
            assert "no answer within" in out.getvalue()

            answered = threading.Event()
            result: list[bool] = []

            def ask() -> None:
                result.append(provider.request(make_request("2")))
                answered.set()

            thread = threading.Thread(target=ask)
            thread.start()
            wait_for(lambda: out.getvalue().count("Approve?") == 2)
            os.write(master, b"y\n")
            assert answered.wait(LONG)
            thread.join(LONG)
            assert result == [True]
    finally:
        os.close(master)
        os.close(slave)


# -- with the manager ----------------------------------------------------------------------------


def test_prompt_closes_when_the_host_answers_elsewhere(pipe):
    reader, _state = pipe
    out = io.StringIO()
    returned = threading.Event()
    terminal = TerminalConfirmationProvider(reader, out, color=False)

    class Watch:
        name = "terminal"

        def request(self, confirmation):
            try:
                return terminal.request(confirmation)
            finally:
                returned.set()

    manager = ConfirmationManager()
    asker = AskInThread(manager, make_request("h"), Watch())
    wait_for(lambda: "Approve?" in out.getvalue())
    assert manager.confirm("h", True)
    assert asker.result().how == "host"
    assert returned.wait(LONG)
    assert "settled elsewhere (host): approved" in out.getvalue()


def test_manager_timeout_closes_the_prompt(pipe):
    reader, _state = pipe
    out = io.StringIO()
    returned = threading.Event()
    terminal = TerminalConfirmationProvider(reader, out, color=False)

    class Watch:
        def request(self, confirmation):
            try:
                return terminal.request(confirmation)
            finally:
                returned.set()

    answer = ConfirmationManager().ask(make_request("t", timeout_ms=80), Watch())
    assert answer.approved is False
    # the prompt outlives the request by a grace period, so the manager's timeout normally
    # settles it; either way it is a rejection and the prompt says why
    assert answer.how in ("timeout", "provider")
    assert returned.wait(LONG)
    assert "no answer within 80 ms: rejected" in out.getvalue()
