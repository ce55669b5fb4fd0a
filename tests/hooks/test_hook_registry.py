"""HookRegistry: order, replacement, chained argument changes, blocking, fail-closed failures."""

from __future__ import annotations

import logging
import threading

import pytest

from codeward.hooks import (
    GATING_EVENTS,
    HookConfig,
    HookContext,
    HookError,
    HookEvent,
    HookMatcher,
    HookRegistry,
    HookResult,
)

LONG = 30.0
PRE = HookEvent.PRE_TOOL_USE
POST = HookEvent.POST_TOOL_USE


def call(tool: str = "bash", args=None, paths=(), event=PRE) -> HookContext:
    return HookContext(
        event,
        session_id="s",
        call_id="call_1",
        tool=tool,
        args={"command": "ls"} if args is None else args,
        paths=paths,
        origin="model",
    )


def recorder(log: list[str], name: str, result=None):
    def handler(context: HookContext):
        log.append(name)
        return result

    return handler


@pytest.fixture
def release():
    """An event that hanging handlers wait on; set at teardown so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def test_events_and_gating():
    assert {e.value for e in HookEvent} >= {
        "pre_tool_use",
        "post_tool_use",
        "permission_request",
        "on_error",
        "session_start",
        "session_end",
    }
    assert {HookEvent.PRE_TOOL_USE, HookEvent.PERMISSION_REQUEST} == GATING_EVENTS
    assert HookEvent.parse("on_error") is HookEvent.ON_ERROR
    with pytest.raises(HookError):
        HookEvent.parse("before_everything")


def test_order_is_priority_then_registration():
    hooks, log = HookRegistry(), []
    hooks.register("late", PRE, None, HookConfig(priority=200), recorder(log, "late"))
    hooks.register("b", PRE, None, None, recorder(log, "b"))  # default priority 100
    hooks.register("first", PRE, None, HookConfig(priority=-5), recorder(log, "first"))
    hooks.register("c", PRE, None, HookConfig(priority=100), recorder(log, "c"))
    hooks.register("other-event", POST, None, None, recorder(log, "other"))
    outcome = hooks.run(PRE, call())
    assert log == ["first", "b", "c", "late"]
    assert [t.id for t in outcome.trace] == log
    assert outcome.action == "continue" and outcome.args is None
    assert hooks.matching(PRE, call()) == log


def test_re_registering_replaces_everything():
    hooks, log = HookRegistry(), []
    hooks.register("a", PRE, HookMatcher(tool="bash"), None, recorder(log, "old-a"))
    hooks.register("b", PRE, None, None, recorder(log, "b"))
    hooks.register("a", PRE, None, None, recorder(log, "new-a"))
    assert hooks.count() == len(hooks) == 2
    hooks.run(PRE, call("read"))  # the old matcher (bash only) is gone too
    assert log == ["b", "new-a"]  # and the new one runs in its own registration slot
    hooks.register("a", POST, None, None, recorder(log, "post-a"))  # even the event changes
    log.clear()
    hooks.run(PRE, call())
    assert log == ["b"]


def test_unregister_and_count():
    hooks = HookRegistry()
    hooks.register("x", "pre_tool_use", None, None, lambda c: None)
    assert "x" in hooks and hooks.ids() == ["x"]
    assert hooks.unregister("x") is True
    assert hooks.unregister("x") is False
    assert hooks.unregister("never") is False
    assert hooks.count() == 0


@pytest.mark.parametrize(
    "args",
    [
        ("", PRE, None, None, lambda c: None),
        (" ", PRE, None, None, lambda c: None),
        (3, PRE, None, None, lambda c: None),
        ("x", "nope", None, None, lambda c: None),
        ("x", PRE, "bash", None, lambda c: None),
        ("x", PRE, None, {"priority": 1}, lambda c: None),
        ("x", PRE, None, None, "not callable"),
    ],
)
def test_bad_registrations(args):
    with pytest.raises(HookError):
        HookRegistry().register(*args)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"priority": True},
        {"priority": 1.5},
        {"priority": 10**12},
        {"timeout_ms": 0},
        {"timeout_ms": 3_600_001},
        {"timeout_ms": "5"},
    ],
)
def test_bad_configs(kwargs):
    with pytest.raises(HookError):
        HookConfig(**kwargs)


def test_hook_results_are_validated():
    with pytest.raises(HookError):
        HookResult.block("")
    with pytest.raises(HookError):
        HookResult.block("   ")
    with pytest.raises(HookError):
        HookResult("allow")
    with pytest.raises(HookError):
        HookResult("skip", {"a": 1})
    with pytest.raises(HookError):
        HookResult.proceed(["not", "a", "mapping"])  # type: ignore[arg-type]
    assert HookResult.skip().action == "skip"


def test_modified_arguments_chain_through_later_hooks():
    hooks, seen = HookRegistry(), []

    def add(flag: str):
        def handler(context: HookContext):
            seen.append(context.args["command"])
            return HookResult.proceed({**context.args, "command": context.args["command"] + flag})

        return handler

    hooks.register("one", PRE, None, HookConfig(priority=1), add(" --one"))
    hooks.register(
        "watch", PRE, None, HookConfig(priority=2), lambda c: seen.append(c.args["command"])
    )
    hooks.register("two", PRE, None, HookConfig(priority=3), add(" --two"))
    original = {"command": "ls", "env": {"A": "1"}}
    outcome = hooks.run(PRE, call(args=original))
    assert seen == ["ls", "ls --one", "ls --one"]
    assert outcome.action == "continue"
    assert outcome.args == {"command": "ls --one --two", "env": {"A": "1"}}
    assert type(outcome.args) is dict and type(outcome.args["env"]) is dict  # plain, owned copy
    assert original == {"command": "ls", "env": {"A": "1"}}
    assert outcome.trace[0].reason == "modified the arguments"


def test_unchanged_arguments_are_not_a_modification():
    hooks = HookRegistry()
    hooks.register("same", PRE, None, None, lambda c: HookResult.proceed(dict(c.args)))
    assert hooks.run(PRE, call()).args is None


def test_handlers_cannot_mutate_the_arguments_in_place():
    hooks = HookRegistry()
    original = {"command": "ls", "nested": {"x": [1]}}

    def sneaky(context: HookContext):
        context.args["command"] = "rm -rf ~"  # raises: a read-only view

    hooks.register("sneaky", PRE, None, None, sneaky)
    outcome = hooks.run(PRE, call(args=original))
    assert outcome.action == "block" and outcome.blocked_by == "sneaky"
    assert "TypeError" in outcome.reason
    assert original["command"] == "ls"

    def nested(context: HookContext):
        context.args["nested"]["x"].append(2)

    hooks.register("sneaky", POST, None, None, nested)
    hooks.run(POST, call(args=original, event=POST))
    assert original["nested"]["x"] == [1]


def test_block_stops_later_hooks():
    hooks, log = HookRegistry(), []
    hooks.register("a", PRE, None, HookConfig(priority=1), recorder(log, "a"))
    hooks.register(
        "guard",
        PRE,
        None,
        HookConfig(priority=2),
        recorder(log, "guard", HookResult.block("no pushes on Friday")),
    )
    hooks.register("after", PRE, None, HookConfig(priority=3), recorder(log, "after"))
    outcome = hooks.run(PRE, call())
    assert log == ["a", "guard"]
    assert (outcome.action, outcome.reason, outcome.blocked_by) == (
        "block",
        "no pushes on Friday",
        "guard",
    )
    assert outcome.blocked and [t.action for t in outcome.trace] == ["continue", "block"]


def test_skip_abstains_and_the_next_hook_runs():
    hooks, log = HookRegistry(), []
    hooks.register(
        "skip", PRE, None, HookConfig(priority=1), recorder(log, "skip", HookResult.skip())
    )
    hooks.register("next", PRE, None, HookConfig(priority=2), recorder(log, "next"))
    outcome = hooks.run(PRE, call())
    assert log == ["skip", "next"]
    assert outcome.action == "continue"
    assert [t.action for t in outcome.trace] == ["skip", "continue"]


def test_matchers_select_hooks():
    hooks, log = HookRegistry(), []
    hooks.register("bash", PRE, HookMatcher(tool="bash"), None, recorder(log, "bash"))
    hooks.register("gh", PRE, HookMatcher(tool="mcp__github"), None, recorder(log, "gh"))
    hooks.register(
        "src", PRE, HookMatcher(tool="write", path_pattern="src/**"), None, recorder(log, "src")
    )
    hooks.run(PRE, call("bash"))
    hooks.run(PRE, call("mcp__github__create_issue", args={}))
    hooks.run(PRE, call("write", args={"file_path": "src/a"}, paths=("src/a",)))
    hooks.run(PRE, call("write", args={"file_path": "docs/a"}, paths=("docs/a",)))
    assert log == ["bash", "gh", "src"]


# -- failures ------------------------------------------------------------------------------------


def _raise(context):
    raise ValueError("hook bug")


def _wrong_type(context):
    return "continue"


@pytest.mark.parametrize("event", sorted(GATING_EVENTS))
@pytest.mark.parametrize(
    ("handler", "words"),
    [(_raise, "raised ValueError: hook bug"), (_wrong_type, "returned str, not a HookResult")],
)
def test_failures_on_gating_events_block(event, handler, words):
    hooks, log = HookRegistry(), []
    hooks.register("broken", event, None, HookConfig(priority=1), handler)
    hooks.register("after", event, None, HookConfig(priority=2), recorder(log, "after"))
    outcome = hooks.run(event, call(event=event))
    assert (outcome.action, outcome.blocked_by) == ("block", "broken")
    assert "'broken'" in outcome.reason and words in outcome.reason
    assert "fail closed" in outcome.reason
    assert outcome.trace[-1].failed and log == []


def test_a_timed_out_handler_blocks_a_gating_event_and_is_abandoned(release):
    hooks = HookRegistry()
    started = threading.Event()

    def hang(context):
        started.set()
        release.wait(LONG)
        return HookResult.proceed({"command": "rm -rf ~"})

    hooks.register("slow", PRE, None, HookConfig(timeout_ms=50), hang)
    outcome = hooks.run(PRE, call())
    assert outcome.action == "block" and "timed out" in outcome.reason
    assert outcome.args is None
    assert started.is_set()


def test_failures_elsewhere_are_logged_and_ignored(caplog, release):
    hooks, log = HookRegistry(), []

    def hang(context):
        release.wait(LONG)

    hooks.register("raises", POST, None, HookConfig(priority=1), _raise)
    hooks.register("nonsense", POST, None, HookConfig(priority=2), _wrong_type)
    hooks.register("slow", POST, None, HookConfig(priority=3, timeout_ms=30), hang)
    hooks.register("fine", POST, None, HookConfig(priority=4), recorder(log, "fine"))
    with caplog.at_level(logging.WARNING, logger="codeward.hooks"):
        outcome = hooks.run(POST, HookContext(POST, tool="bash", result={"exit_code": 0}))
    assert outcome.action == "continue" and outcome.blocked_by is None
    assert log == ["fine"]
    assert [(t.id, t.failed) for t in outcome.trace] == [
        ("raises", True),
        ("nonsense", True),
        ("slow", True),
        ("fine", False),
    ]
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "raises" in messages and "nonsense" in messages and "slow" in messages


def test_base_exceptions_in_handlers_are_contained():
    hooks = HookRegistry()

    def exit_(context):
        raise SystemExit(1)

    hooks.register("exit", PRE, None, None, exit_)
    outcome = hooks.run(PRE, call())
    assert outcome.action == "block" and "SystemExit" in outcome.reason


def test_context_must_match_the_event():
    with pytest.raises(HookError):
        HookRegistry().run(PRE, call(event=POST))
    with pytest.raises(HookError):
        HookRegistry().run(PRE, {"tool": "bash"})  # type: ignore[arg-type]


def test_context_is_a_deep_copy():
    args = {"a": [1, {"b": 2}]}
    context = HookContext(PRE, tool="t", args=args, paths=["x"], extra={"k": [1]})
    args["a"][1]["b"] = 3
    assert context.args["a"][1]["b"] == 2 and context.paths == ("x",)
    with pytest.raises(TypeError):
        context.extra["k"] = 2  # type: ignore[index]
    with pytest.raises(HookError):
        HookContext(PRE, paths="src/a")  # a bare string is not a path list
    with pytest.raises(HookError):
        HookContext(PRE, args=[1])  # type: ignore[arg-type]


def test_handlers_may_change_the_registry_while_running():
    hooks, log = HookRegistry(), []

    def register_more(context):
        hooks.register("added", PRE, None, None, recorder(log, "added"))
        hooks.unregister("victim")

    hooks.register("mutator", PRE, None, HookConfig(priority=1), register_more)
    hooks.register("victim", PRE, None, HookConfig(priority=2), recorder(log, "victim"))
    hooks.run(PRE, call())
    assert log == ["victim"]  # this run used its snapshot
    hooks.run(PRE, call())
    assert log == ["victim", "added"]


def test_runs_and_registrations_from_many_threads():
    hooks = HookRegistry()
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        try:
            barrier.wait(LONG)
            for i in range(25):
                hooks.register(
                    f"h{n}-{i % 3}", PRE, None, HookConfig(priority=i % 5), lambda c: None
                )
                outcome = hooks.run(PRE, call())
                assert outcome.action == "continue"
                hooks.unregister(f"h{n}-{(i + 1) % 3}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LONG)
    assert errors == []
    assert hooks.count() <= 8 * 3


def test_outcome_to_dict_is_json_ready():
    import json

    hooks = HookRegistry()
    hooks.register(
        "m", PRE, None, None, lambda c: HookResult.proceed({"command": "ls -la", "x": [1]})
    )
    data = hooks.run(PRE, call()).to_dict()
    assert json.loads(json.dumps(data))["args"] == {"command": "ls -la", "x": [1]}


# -- plain mappings ------------------------------------------------------------------------------


@pytest.mark.parametrize("event", [PRE, POST])
def test_a_plain_mapping_works_like_the_result_it_spells(event):
    hooks, log = HookRegistry(), []
    hooks.register(
        "rewrite",
        event,
        None,
        HookConfig(priority=1),
        lambda c: {"action": "continue", "args": {"command": "ls -la"}, "reason": "longer"},
    )
    hooks.register("abstain", event, None, HookConfig(priority=2), lambda c: {"action": "skip"})
    hooks.register("after", event, None, HookConfig(priority=3), recorder(log, "after"))
    outcome = hooks.run(event, call(event=event))
    assert outcome.action == "continue" and outcome.args == {"command": "ls -la"}
    assert [(t.id, t.action, t.failed) for t in outcome.trace] == [
        ("rewrite", "continue", False),
        ("abstain", "skip", False),
        ("after", "continue", False),
    ]
    hooks.register("stop", event, None, HookConfig(priority=0), lambda c: {
        "action": "block", "reason": "not today"
    })  # fmt: skip
    outcome = hooks.run(event, call(event=event))
    assert (outcome.action, outcome.reason, outcome.blocked_by) == ("block", "not today", "stop")


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({"action": "continue", "argz": {"command": "rm -rf ~"}}, "unknown key(s) argz"),
        ({"args": {"command": "x"}}, "needs an 'action'"),
        ({"action": "allow"}, "hook action must be one of"),
        ({"action": "block"}, "non-blank reason"),
        ({"action": "skip", "args": {"command": "x"}}, "only a 'continue'"),
    ],
)
def test_a_mapping_that_is_not_a_result_blocks_a_gating_event(answer, words):
    hooks = HookRegistry()
    hooks.register("odd", PRE, None, None, lambda c: answer)
    outcome = hooks.run(PRE, call())
    assert outcome.action == "block" and outcome.blocked_by == "odd"
    assert words in outcome.reason and outcome.args is None


def test_each_matcher_sees_the_call_as_the_hooks_before_it_left_it():
    hooks, seen = HookRegistry(), []
    hooks.register(
        "redirect",
        PRE,
        HookMatcher(tool="read"),
        HookConfig(priority=1),
        lambda c: HookResult.proceed({"file_path": "./secrets//key"}),
    )
    hooks.register(
        "guard",
        PRE,
        HookMatcher(path_pattern="secrets/**"),
        HookConfig(priority=2),
        lambda c: (seen.append(c.paths), HookResult.block("no secrets"))[1],
    )
    hooks.register(
        "bash-only", PRE, HookMatcher(tool="bash"), HookConfig(priority=3), recorder(seen, "x")
    )

    def refresh(args):  # the session's resolution: the path as the tool opens it
        return {"file_path": "secrets/key"}, ["secrets/key"]

    context = call("read", {"file_path": "docs/a"}, paths=("docs/a",))
    assert hooks.matching(PRE, context) == ["redirect"]  # as long as nothing rewrites the call
    outcome = hooks.run(PRE, context, refresh=refresh)
    assert outcome.action == "block" and outcome.blocked_by == "guard"
    assert seen == [("secrets/key",)]
    assert outcome.args == {"file_path": "secrets/key"}
    # a rewrite the session cannot resolve leaves no paths: the call is refused after the hooks

    def refused(args):
        raise ValueError("outside the workspace")

    seen.clear()
    outcome = hooks.run(PRE, context, refresh=refused)
    assert outcome.action == "continue" and seen == []
    assert outcome.args == {"file_path": "./secrets//key"}
