"""ConfirmationManager: one pending request per id, the first settlement wins, with real threads."""

from __future__ import annotations

import threading

import pytest
from confirm_helpers import LONG, AskInThread, GateProvider, make_request

from codeward.hitl import (
    ConfirmationManager,
    ConfirmationPolicy,
    StaticProvider,
    provider_available,
)


def wait_pending(manager: ConfirmationManager, *ids: str) -> None:
    """Returns once every id is pending (the ask threads registered them)."""
    done = threading.Event()
    for _ in range(int(LONG / 0.005)):
        if set(ids) <= {r.id for r in manager.pending()}:
            return
        done.wait(0.005)
    raise AssertionError(f"{ids} never became pending")


# -- the provider's answer -----------------------------------------------------------------------


def test_provider_approves_and_rejects():
    manager = ConfirmationManager(ConfirmationPolicy())
    answer = manager.ask(make_request("a"), StaticProvider(True))
    assert (answer.approved, answer.how, answer.answered_by) == (True, "provider", "static")
    answer = manager.ask(make_request("b"), StaticProvider(False))
    assert (answer.approved, answer.how) == (False, "provider")
    assert manager.pending() == []


class _Returns:
    def __init__(self, value: object) -> None:
        self.value = value

    def request(self, confirmation):
        return self.value


@pytest.mark.parametrize("value", [1, "yes", "True", [True], object(), None, 1.0])
def test_only_a_real_true_approves(value):
    answer = ConfirmationManager().ask(make_request(), _Returns(value))
    assert (answer.approved, answer.how) == (False, "provider")
    assert f"returned {type(value).__name__}, not a bool" in answer.reason
    # a StaticProvider's callable is held to the same rule
    answer = ConfirmationManager().ask(make_request(), StaticProvider(lambda request: value))
    assert answer.approved is False


class _Raises:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def request(self, confirmation):
        raise self.exc


@pytest.mark.parametrize(
    "exc", [RuntimeError("terminal gone"), KeyboardInterrupt(), SystemExit(3), ValueError("")]
)
def test_provider_raising_rejects(exc):
    manager = ConfirmationManager()
    answer = manager.ask(make_request(), _Raises(exc))
    assert (answer.approved, answer.how) == (False, "provider_error")
    assert type(exc).__name__ in answer.reason
    if str(exc):
        assert str(exc) in answer.reason
    assert manager.pending() == []


def test_disabled_policy_and_missing_provider_reject_without_asking():
    provider = StaticProvider(True)
    answer = ConfirmationManager(ConfirmationPolicy(enabled=False)).ask(make_request(), provider)
    assert (answer.approved, answer.how) == (False, "unavailable")
    assert "disabled" in answer.reason
    answer = ConfirmationManager().ask(make_request(), None)
    assert (answer.approved, answer.how) == (False, "unavailable")
    assert provider.requests == []


def test_a_request_object_is_asked_once():
    manager = ConfirmationManager()
    request = make_request()
    assert manager.ask(request, StaticProvider(True)).approved
    again = manager.ask(request, StaticProvider(True))
    assert (again.approved, again.how) == (False, "duplicate")
    assert request.answer is not None and request.answer.approved  # the first answer stays


# -- timeouts ------------------------------------------------------------------------------------


def test_timeout_rejects_and_clears_the_entry(gate):
    manager = ConfirmationManager()
    request = make_request(timeout_ms=50)
    answer = manager.ask(request, gate)
    assert (answer.approved, answer.how) == (False, "timeout")
    assert manager.pending() == []
    assert manager.confirm(request.id, True) is False  # too late: not an error, no effect
    assert request.answer is answer
    if gate.asked.is_set():  # the provider thread got to run before the timeout
        gate.release.set()
        assert gate.returned.wait(LONG)
    assert request.answer is answer  # the provider's late answer is ignored


def test_timeout_auto_approve_only_when_the_host_sets_it(gate):
    policy = ConfirmationPolicy(timeout_action="auto_approve")
    answer = ConfirmationManager(policy).ask(make_request(timeout_ms=20), gate)
    assert (answer.approved, answer.how) == (True, "timeout")


def test_provider_can_see_that_someone_else_settled(gates):
    seen: list[bool] = []
    started, returned = threading.Event(), threading.Event()

    class Watcher:
        def request(self, confirmation):
            started.set()
            seen.append(confirmation.wait_settled(LONG))
            returned.set()
            return True

    manager = ConfirmationManager()
    asker = AskInThread(manager, make_request("w"), Watcher())
    assert started.wait(LONG)
    assert manager.confirm("w", False, "not now")
    answer = asker.result()
    assert (answer.approved, answer.how, answer.reason) == (False, "host", "not now")
    assert returned.wait(LONG)
    assert seen == [True]


# -- the host's answers --------------------------------------------------------------------------


def test_host_confirm_settles_only_that_id(gates):
    manager = ConfirmationManager()
    a, b = GateProvider(), GateProvider()
    gates += [a, b]
    ask_a = AskInThread(manager, make_request("a"), a)
    ask_b = AskInThread(manager, make_request("b"), b)
    wait_pending(manager, "a", "b")
    assert manager.confirm("a", True)
    answer = ask_a.result()
    assert (answer.approved, answer.how, answer.answered_by) == (True, "host", "host")
    assert [r.id for r in manager.pending()] == ["b"]
    assert manager.confirm("a", False) is False  # already settled
    assert manager.confirm("b", False)
    assert ask_b.result().approved is False


def test_unknown_ids_are_not_errors():
    manager = ConfirmationManager()
    assert manager.confirm("nope", True) is False
    assert manager.confirm("", False) is False
    assert manager.confirm(123, True) is False  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        manager.confirm("nope", "yes")  # type: ignore[arg-type]
    assert manager.cancel_all() == 0


def test_pending_is_ordered_by_creation(gates):
    manager = ConfirmationManager()
    askers = []
    for id in ["z", "a", "m"]:
        gate = GateProvider()
        gates.append(gate)
        askers.append(AskInThread(manager, make_request(id), gate))
        wait_pending(manager, id)
    assert [r.id for r in manager.pending()] == ["z", "a", "m"]
    assert manager.cancel_all() == 3
    for asker in askers:
        answer = asker.result()
        assert (answer.approved, answer.how) == (False, "cancelled")
    assert manager.pending() == []
    assert manager.cancel_all() == 0


@pytest.mark.parametrize("round", range(10))
def test_concurrent_confirms_exactly_one_wins(gate, round):
    manager = ConfirmationManager()
    asker = AskInThread(manager, make_request("race"), gate)
    wait_pending(manager, "race")
    threads_n = 24
    barrier = threading.Barrier(threads_n)
    results: list[tuple[bool, bool]] = []
    lock = threading.Lock()

    def answer(i: int) -> None:
        approved = i % 2 == 0
        barrier.wait(LONG)
        won = manager.confirm("race", approved, f"answer {i}")
        with lock:
            results.append((won, approved))

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LONG)
    winners = [approved for won, approved in results if won]
    assert len(results) == threads_n and len(winners) == 1
    final = asker.result()
    assert final.how == "host" and final.approved is winners[0]


# -- duplicates ----------------------------------------------------------------------------------


def test_duplicate_id_while_pending_rejects_both(gate, gates):
    manager = ConfirmationManager()
    first = AskInThread(manager, make_request("dup"), gate)
    assert gate.asked.wait(LONG)
    second_provider = GateProvider()
    gates.append(second_provider)
    second = manager.ask(make_request("dup"), second_provider)
    assert (second.approved, second.how) == (False, "duplicate")
    assert second_provider.requests == []  # never asked
    answer = first.result()
    assert (answer.approved, answer.how) == (False, "duplicate")
    assert manager.pending() == []
    assert manager.confirm("dup", True) is False
    gate.release.set()  # the first provider's late approval changes nothing
    assert gate.returned.wait(LONG)
    assert answer.approved is False


def test_duplicate_does_not_touch_other_ids(gates):
    manager = ConfirmationManager()
    keep, dup = GateProvider(), GateProvider()
    gates += [keep, dup]
    keeper = AskInThread(manager, make_request("keep"), keep)
    first = AskInThread(manager, make_request("dup"), dup)
    wait_pending(manager, "keep", "dup")
    assert manager.ask(make_request("dup"), StaticProvider(True)).how == "duplicate"
    assert first.result().how == "duplicate"
    assert [r.id for r in manager.pending()] == ["keep"]
    keep.release.set()
    assert keeper.result().approved is True


def test_same_id_after_settlement_is_a_new_request(gate, gates):
    manager = ConfirmationManager()
    asker = AskInThread(manager, make_request("x"), gate)
    assert gate.asked.wait(LONG)
    manager.confirm("x", False)
    assert asker.result().approved is False
    # a late settlement of the old request never removes a new one with the same id
    second = GateProvider(value=True)
    gates.append(second)
    again = AskInThread(manager, make_request("x"), second)
    wait_pending(manager, "x")
    gate.release.set()
    assert gate.returned.wait(LONG)
    assert [r.id for r in manager.pending()] == ["x"]
    assert manager.confirm("x", True)
    assert again.result().how == "host"


def test_expiring_one_does_not_settle_another(gates):
    manager = ConfirmationManager()
    short, long_ = GateProvider(), GateProvider()
    gates += [short, long_]
    waiting = AskInThread(manager, make_request("long"), long_)
    wait_pending(manager, "long")
    assert manager.ask(make_request("short", timeout_ms=30), short).how == "timeout"
    assert [r.id for r in manager.pending()] == ["long"]
    assert manager.confirm("long", True)
    assert waiting.result().approved is True


# -- races between different kinds of settlement -------------------------------------------------


@pytest.mark.parametrize("round", range(30))
def test_timeout_versus_host_answer(round, gate):
    """A confirm() racing the timeout: whichever wins, the two sides agree."""
    manager = ConfirmationManager()
    request = make_request("t", timeout_ms=1 + round % 5)
    confirmed: list[bool] = []

    def hammer() -> None:
        while not request.settled:
            if manager.confirm("t", True):
                confirmed.append(True)
                return

    thread = threading.Thread(target=hammer)
    thread.start()
    answer = manager.ask(request, gate)
    thread.join(LONG)
    assert answer.how in ("timeout", "host")
    assert (answer.how == "host") == bool(confirmed)
    assert answer.approved is (answer.how == "host")
    assert manager.pending() == []


@pytest.mark.parametrize("round", range(20))
def test_provider_versus_host_versus_cancel(round):
    """Provider, host and cancel_all released together: one answer, everybody agrees."""
    manager = ConfirmationManager()
    go = threading.Barrier(3)

    class Racer:
        name = "racer"

        def request(self, confirmation):
            go.wait(LONG)
            return True

    outcomes: dict[str, object] = {}
    asker = AskInThread(manager, make_request("r"), Racer())
    wait_pending(manager, "r")

    def host() -> None:
        go.wait(LONG)
        outcomes["host"] = manager.confirm("r", False)

    def cancel() -> None:
        go.wait(LONG)
        outcomes["cancel"] = manager.cancel_all()

    threads = [threading.Thread(target=host), threading.Thread(target=cancel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LONG)
    answer = asker.result()
    assert answer.how in ("provider", "host", "cancelled")
    assert (answer.how == "host") is outcomes["host"]
    assert (answer.how == "cancelled") is (outcomes["cancel"] == 1)
    assert answer.approved is (answer.how == "provider")


def test_many_ids_in_parallel_each_get_their_own_answer():
    manager = ConfirmationManager()
    ids = [f"call_{i}" for i in range(40)]
    providers = {id: GateProvider(value=i % 3 == 0) for i, id in enumerate(ids)}
    askers = {id: AskInThread(manager, make_request(id), providers[id]) for id in ids}
    wait_pending(manager, *ids)
    for i, id in enumerate(ids):
        if i % 2:
            assert manager.confirm(id, True)
        else:
            providers[id].release.set()
    for i, id in enumerate(ids):
        answer = askers[id].result()
        if i % 2:
            assert (answer.how, answer.approved) == ("host", True)
        else:
            assert (answer.how, answer.approved) == ("provider", i % 3 == 0)
    for provider in providers.values():
        provider.release.set()
    assert len(manager) == 0


# -- availability --------------------------------------------------------------------------------


class _Avail:
    def __init__(self, value):
        self.value = value

    def request(self, confirmation):
        return True

    def available_for(self, call):
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value


def test_provider_available_fails_closed():
    assert provider_available(None, object()) is False
    assert provider_available(_Returns(True), object()) is True  # no available_for: everything
    assert provider_available(_Avail(True), object()) is True
    assert provider_available(_Avail(False), object()) is False
    assert provider_available(_Avail(1), object()) is False
    assert provider_available(_Avail(RuntimeError("x")), object()) is False
    assert provider_available(StaticProvider(True, available=False), object()) is False


def test_an_interrupted_wait_cancels_the_request(gate, monkeypatch):
    from codeward.hitl import _request

    def interrupted(self, timeout):
        raise KeyboardInterrupt

    manager = ConfirmationManager()
    request = make_request("ctrl-c")
    monkeypatch.setattr(_request._Settlement, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        manager.ask(request, gate)
    monkeypatch.undo()
    assert request.answer is not None and request.answer.how == "cancelled"
    assert manager.pending() == [] and manager.confirm("ctrl-c", True) is False
