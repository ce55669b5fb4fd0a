"""The macOS boundary: the Seatbelt profile as text, the ports of the C rules, the plumbing.

The profile is parsed with a small reader that follows TinyScheme's string
syntax (what sandbox-exec compiles) and evaluated with SBPL's rule: the last
matching rule decides. The sandbox itself runs on Linux through a stand-in
for sandbox-exec that ignores the profile, which checks everything but the
kernel's enforcement; the real runs are for macOS only.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeward._errors import SandboxArgumentError, SandboxUnavailable
from codeward.sandbox import _seatbelt
from codeward.sandbox._seatbelt import (
    HOME_SECRETS,
    MACH_SERVICES,
    PROTECTED_NAMES,
    CredentialScan,
    PythonProcessHostBashSandbox,
    SeatbeltBashSandbox,
    build_env,
    check_extra_env,
    env_name_is_injection,
    env_name_is_secret,
    env_value_is_secret,
    sbpl_string,
    seatbelt_probe,
    seatbelt_profile,
)

WS = "/Users/me/proj"
HOME = "/Users/me"
SCRATCH = "/private/var/folders/xy/abc123/T/a3s-run-q1w2e3"
DATA = "/System/Volumes/Data"

# ---- a reader and an evaluator for SBPL ----------------------------------------------------


class Sym(str):
    """A bare word: an operation, a filter name, a keyword."""


class Text(str):
    """A string literal, decoded."""


def read_string(text: str, pos: int) -> tuple[str, int]:
    """TinyScheme's readstrexp: \\n \\t \\r \\" \\xHH \\ooo; any other escaped char is itself."""
    out: list[str] = []
    while True:
        if pos >= len(text):
            raise ValueError("unterminated string")
        ch = text[pos]
        pos += 1
        if ch == '"':
            return "".join(out), pos
        if ch != "\\":
            out.append(ch)
            continue
        esc = text[pos]
        pos += 1
        if esc in "xX":
            out.append(chr(int(text[pos : pos + 2], 16)))
            pos += 2
        elif esc in "01234567":
            digits = esc
            while len(digits) < 3 and text[pos] in "01234567":
                digits += text[pos]
                pos += 1
            out.append(chr(int(digits, 8)))
        else:
            out.append({"n": "\n", "t": "\t", "r": "\r"}.get(esc, esc))


def parse_sbpl(text: str) -> list[Any]:
    stack: list[list[Any]] = [[]]
    pos = 0
    while pos < len(text):
        ch = text[pos]
        if ch in " \t\r\n":
            pos += 1
        elif ch == ";":
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
        elif ch == "(":
            stack.append([])
            pos += 1
        elif ch == ")":
            if len(stack) == 1:
                raise ValueError(f"unbalanced ) at {pos}")
            form = stack.pop()
            stack[-1].append(form)
            pos += 1
        elif ch == '"':
            value, pos = read_string(text, pos + 1)
            stack[-1].append(Text(value))
        elif text.startswith('#"', pos):
            end = text.index('"', pos + 2)
            stack[-1].append(Text(text[pos + 2 : end]))
            pos = end + 1
        else:
            m = re.compile(r'[^\s()";]+').match(text, pos)
            assert m, text[pos : pos + 20]
            stack[-1].append(Sym(m.group(0)))
            pos = m.end()
    if len(stack) != 1:
        raise ValueError("unbalanced (")
    return stack[0]


@dataclass
class Query:
    op: str
    path: str | None = None
    name: str | None = None  # global-name, sysctl-name, ipc-posix-name
    target: str | None = None
    extensions: tuple[str, ...] = field(default_factory=tuple)
    vnode: str = "REGULAR-FILE"


def op_matches(pattern: str, op: str) -> bool:
    return pattern in ("default", op) or (pattern.endswith("*") and op.startswith(pattern[:-1]))


def filter_matches(f: list[Any], q: Query) -> bool:
    kind, args = f[0], f[1:]
    if kind == "require-all":
        return all(filter_matches(a, q) for a in args)
    if kind == "require-any":
        return any(filter_matches(a, q) for a in args)
    if kind == "require-not":
        return not filter_matches(args[0], q)
    value = str(args[0])
    if kind == "literal":
        return q.path == value
    if kind == "subpath":
        return q.path is not None and (q.path == value or q.path.startswith(value + "/"))
    if kind == "regex":
        return q.path is not None and re.search(value, q.path) is not None
    if kind in ("global-name", "sysctl-name", "ipc-posix-name"):
        return q.name == value
    if kind == "sysctl-name-prefix":
        return q.name is not None and q.name.startswith(value)
    if kind == "target":
        return q.target == value
    if kind == "extension":
        return value in q.extensions
    if kind == "vnode-type":
        return q.vnode == value
    raise AssertionError(f"unknown filter {kind}")


def decide(forms: list[Any], q: Query) -> str:
    """The verdict of the last rule that matches (SBPL's precedence)."""
    verdict = ""
    for form in forms:
        if not form or form[0] not in ("allow", "deny"):
            continue
        ops = [x for x in form[1:] if isinstance(x, Sym)]
        filters = [x for x in form[1:] if isinstance(x, list)]
        if not any(op_matches(o, q.op) for o in ops):
            continue
        if filters and not any(filter_matches(f, q) for f in filters):
            continue
        verdict = str(form[0])
    assert verdict, f"no rule for {q}"
    return verdict


def profile(**overrides: Any) -> str:
    kwargs: dict[str, Any] = {
        "home": HOME,
        "toolchain_roots": [
            f"{HOME}/.cargo",
            f"{HOME}/.pyenv/versions/3.12/bin",
            "/opt/homebrew/bin",
        ],
        "masked_paths": [f"{WS}/.env", f"{WS}/sub/deep/.npmrc", f"{WS}/keys/.ssh"],
    }
    kwargs.update(overrides)
    workspace = kwargs.pop("workspace", WS)
    scratch = kwargs.pop("scratch", SCRATCH)
    return seatbelt_profile(workspace, scratch, **kwargs)


class Policy:
    def __init__(self, text: str) -> None:
        self.text = text
        self.forms = parse_sbpl(text)

    def read(self, path: str) -> str:
        return decide(self.forms, Query("file-read-data", path))

    def stat(self, path: str) -> str:
        return decide(self.forms, Query("file-read-metadata", path))

    def write(self, path: str) -> str:
        return decide(self.forms, Query("file-write-data", path))

    def create(self, path: str) -> str:
        return decide(self.forms, Query("file-write-create", path))

    def unlink(self, path: str) -> str:
        return decide(self.forms, Query("file-write-unlink", path))

    def link(self, path: str) -> str:
        return decide(self.forms, Query("file-link", path))

    def op(self, op: str, **kwargs: Any) -> str:
        return decide(self.forms, Query(op, **kwargs))


@pytest.fixture(scope="module")
def policy() -> Policy:
    return Policy(profile())


# ---- the reader itself -----------------------------------------------------------------


def test_reader_follows_tinyscheme_strings() -> None:
    forms = parse_sbpl(r'(a "x\"y\\z\n\t\x41\101" #"^/a\.b" ; comment' + "\n)")
    assert forms == [["a", 'x"y\\z\n\tAA', "^/a\\.b"]]
    with pytest.raises(ValueError):
        parse_sbpl("(a")
    with pytest.raises(ValueError):
        parse_sbpl('(a "b)')


# ---- structure and ordering --------------------------------------------------------------


def test_profile_starts_with_version_then_deny_default(policy: Policy) -> None:
    assert policy.forms[0] == ["version", "1"]
    assert policy.forms[1] == ["deny", "default"]
    # every form is a rule (no defines, no code that could run at compile time)
    assert {f[0] for f in policy.forms[1:]} == {"allow", "deny"}


def test_anything_not_allowed_is_denied(policy: Policy) -> None:
    for op in ("iokit-open", "mach-register", "system-socket", "nvram-set", "sysctl-write"):
        assert policy.op(op, name="x") == "deny", op


def test_rules_go_from_broad_to_narrow(policy: Policy) -> None:
    lines = policy.text.splitlines()

    def first(prefix: str) -> int:
        return next(i for i, line in enumerate(lines) if line.startswith(prefix))

    read = _seatbelt.READ
    order = [
        "(deny default)",
        f"(allow {read})",
        f"(deny {read}",  # the homes
        "(allow file-read-metadata",
        "(allow file-write*",
        f"(deny {read} file-write* file-link file-clone",  # credential stores
        "(deny file-write* file-link",  # protected names
        "(deny file-write-unlink",
        "(deny network*)",
    ]
    positions = [first(p) for p in order]
    assert positions == sorted(positions), list(zip(order, positions, strict=True))
    # the network denials are the very last rules
    assert [f for f in policy.forms if f][-4:] == [
        ["deny", "network*"],
        ["deny", "network-outbound"],
        ["deny", "network-inbound"],
        ["deny", "network-bind"],
    ]


def test_last_matching_rule_wins_across_the_layers(policy: Policy) -> None:
    # file-read*: allowed, then the home denied, then the workspace re-allowed,
    # then a masked file inside it denied again
    assert policy.read("/usr/bin/git") == "allow"
    assert policy.read(f"{HOME}/Documents/taxes.pdf") == "deny"
    assert policy.read(f"{WS}/src/main.c") == "allow"
    assert policy.read(f"{WS}/.env") == "deny"


# ---- reading -------------------------------------------------------------------------------


def test_the_homes_are_not_readable(policy: Policy) -> None:
    for path in (
        f"{HOME}/.zsh_history",
        f"{HOME}/Library/Mail/x",
        "/Users/other/notes.txt",
        "/private/var/root/.bash_history",
        f"{DATA}{HOME}/.zsh_history",  # the data-volume spelling of the same file
    ):
        assert policy.read(path) == "deny", path
    # the path to the workspace can be walked (stat), not listed
    for ancestor in ("/Users", HOME):
        assert policy.stat(ancestor) == "allow"
        assert policy.read(ancestor) == "deny"
    assert policy.read("/etc/hosts") == "allow"
    assert policy.read("/opt/homebrew/bin/python3") == "allow"


def test_programs_run_and_map_where_they_can_be_read(policy: Policy) -> None:
    for op in ("process-exec", "process-exec-interpreter", "file-map-executable"):
        assert policy.op(op, path="/usr/bin/git") == "allow", op
        assert policy.op(op, path=f"{HOME}/.cargo/bin/cargo") == "allow", op
        assert policy.op(op, path=f"{WS}/target/debug/app") == "allow", op
        assert policy.op(op, path=f"{HOME}/bin/private-tool") == "deny", op
        assert policy.op(op, path=f"{WS}/.env") == "deny", op


def test_toolchain_roots_under_the_home_are_readable_not_writable(policy: Policy) -> None:
    assert policy.read(f"{HOME}/.cargo/bin/cargo") == "allow"
    assert policy.read(f"{HOME}/.pyenv/versions/3.12/bin/python") == "allow"
    assert policy.read(f"{HOME}/.pyenv/versions/3.11/bin/python") == "deny"
    assert policy.write(f"{HOME}/.cargo/bin/cargo") == "deny"
    # cargo keeps its registry token inside CARGO_HOME
    for name in ("credentials", "credentials.toml"):
        assert policy.read(f"{HOME}/.cargo/{name}") == "deny"


def test_toolchain_roots_never_expose_a_home_or_a_credential_store() -> None:
    p = Policy(
        profile(
            toolchain_roots=[
                HOME,
                f"{HOME}/.config/nvm",
                f"{HOME}/.ssh",
                f"{HOME}/.aws/bin",
                f"{HOME}/Library",  # holds the keychains
                f"{WS}/node_modules/.bin",
                "/Users/other/.gnupg/x",
                "/usr/local/bin",  # not under a home: readable anyway, not listed
            ]
        )
    )
    assert p.read(f"{HOME}/x") == "deny"
    assert p.read(f"{HOME}/.config/nvm/nvm.sh") == "deny"
    assert p.read(f"{HOME}/Library/Keychains/login.keychain-db") == "deny"
    assert p.read("/Users/other/.gnupg/x/y") == "deny"
    assert '"/usr/local/bin"' not in p.text
    assert f'(subpath "{HOME}")' in p.text  # only in the denial of the home


def test_credential_stores_are_denied(policy: Policy) -> None:
    for path in (
        "/private/etc/master.passwd",
        "/private/etc/sudoers",
        "/private/etc/ssh/ssh_host_ed25519_key",
        "/Library/Keychains/System.keychain",
    ):
        assert policy.read(path) == "deny", path
    assert '(subpath "/etc/master.passwd")' in policy.text
    assert f'(subpath "{HOME}/Library/Keychains")' in policy.text


def test_credential_stores_stay_denied_when_the_workspace_is_the_home() -> None:
    p = Policy(profile(workspace=HOME, masked_paths=[]))
    assert p.read(f"{HOME}/src/app.py") == "allow"
    assert p.write(f"{HOME}/src/app.py") == "allow"
    for secret in HOME_SECRETS:
        assert p.read(f"{HOME}/{secret}/x") == "deny", secret
        assert p.write(f"{HOME}/{secret}/x") == "deny", secret
        assert p.link(f"{HOME}/{secret}/x") == "deny", secret


def test_a_workspace_inside_a_credential_directory_stays_usable() -> None:
    ws = f"{HOME}/.config/myproj"
    p = Policy(profile(workspace=ws, masked_paths=[]))
    assert p.read(f"{ws}/a") == "allow" and p.write(f"{ws}/a") == "allow"
    assert p.read(f"{HOME}/.config/gh/hosts.yml") == "deny"
    assert p.read(f"{HOME}/.ssh/id_rsa") == "deny"


# ---- writing -------------------------------------------------------------------------------


def test_only_the_workspace_scratch_and_devices_are_writable(policy: Policy) -> None:
    for path in (f"{WS}/src/new.c", f"{WS}/.gitignore", f"{WS}/.github/workflows/ci.yml"):
        assert policy.write(path) == "allow", path
        assert policy.create(path) == "allow", path
    assert policy.write(f"{SCRATCH}/home/.cache/x") == "allow"
    for dev in ("/dev/null", "/dev/tty", "/dev/dtracehelper", "/dev/fd/1", "/dev/stderr"):
        assert policy.write(dev) == "allow", dev
    for path in (
        "/tmp/x",
        "/private/tmp/x",
        f"{HOME}/.zshrc",
        f"{HOME}/Library/LaunchAgents/evil.plist",
        "/Users/me/proj-other/x",  # a sibling sharing the prefix
        "/usr/local/bin/git",
        "/dev/disk0",
        "/private/var/folders/xy/abc123/T/other",
    ):
        assert policy.write(path) == "deny", path
        assert policy.create(path) == "deny", path


@pytest.mark.parametrize("name", sorted(PROTECTED_NAMES))
def test_each_protected_name_is_read_only_and_cannot_be_created(policy: Policy, name: str) -> None:
    path = f"{WS}/{name}"
    assert f'(literal "{path}")' in policy.text
    assert f'(subpath "{path}")' in policy.text
    assert policy.create(path) == "deny"
    assert policy.write(path) == "deny"
    assert policy.write(f"{path}/hooks/pre-commit") == "deny"
    assert policy.unlink(path) == "deny"
    assert policy.link(path) == "deny"
    assert policy.read(path) == "allow"
    assert policy.write(f"{DATA}{path}") == "deny"
    # any case variant (APFS is case-insensitive), also when missing
    for variant in (name.upper(), name[:2].upper() + name[2:], name.title()):
        if variant != name:
            assert policy.create(f"{WS}/{variant}") == "deny", variant
            assert policy.write(f"{WS}/{variant}/x") == "deny", variant


def test_protection_is_for_the_top_level_names_only(policy: Policy) -> None:
    for path in (
        f"{WS}/sub/.git/config",
        f"{WS}/.gitignore",
        f"{WS}/.github/x",
        f"{WS}/.gitmodules.bak",
        f"{WS}/.bashrc~",
        f"{WS}/x.git",
        f"{WS}/docs/.bashrc",
    ):
        assert policy.write(path) == "allow", path


def test_extra_protected_paths_and_disk_case_variants() -> None:
    gitdir = "/Users/me/repo/.git/worktrees/proj"
    p = Policy(profile(protected_paths=[f"{WS}/.git", f"{WS}/.GitModules", gitdir]))
    assert p.write(f"{WS}/.GitModules") == "deny"
    assert p.write(f"{gitdir}/HEAD") == "deny"
    assert p.read(f"{gitdir}/HEAD") == "allow"  # the worktree's real gitdir, read-only
    assert p.read("/Users/me/repo/src/x") == "deny"
    # every protected name keeps its case-insensitive denial
    assert p.create(f"{WS}/.claude") == "deny"


def test_masked_credentials_are_neither_readable_nor_writable(policy: Policy) -> None:
    for path in (f"{WS}/.env", f"{WS}/sub/deep/.npmrc", f"{WS}/keys/.ssh/id_ed25519"):
        assert policy.read(path) == "deny", path
        assert policy.stat(path) == "deny", path
        assert policy.write(path) == "deny", path
        assert policy.link(path) == "deny", path
    assert policy.read(f"{WS}/.env.example.txt") == "allow"  # not masked (the scan decides)


def test_directories_above_a_masked_file_cannot_be_moved(policy: Policy) -> None:
    for path in (WS, f"{WS}/sub", f"{WS}/sub/deep", f"{WS}/keys"):
        assert policy.unlink(path) == "deny", path
    assert policy.unlink(f"{WS}/sub/other.txt") == "allow"
    assert policy.unlink(f"{WS}/src") == "allow"


def test_hard_links_stay_inside_the_writable_trees(policy: Policy) -> None:
    assert policy.link(f"{WS}/src/a.o") == "allow"
    assert policy.link(f"{SCRATCH}/home/x") == "allow"
    assert policy.link(f"{HOME}/.ssh/id_rsa") == "deny"
    assert policy.link("/etc/hosts") == "deny"
    assert policy.op("file-clone", path=f"{WS}/.env") == "deny"
    assert policy.op("file-clone", path=f"{WS}/big.bin") == "allow"
    # a directory clones with its masked files inside: refused
    assert policy.op("file-clone", path=f"{WS}/src", vnode="DIRECTORY") == "deny"


# ---- processes, IPC, network -------------------------------------------------------------


def test_network_is_denied_entirely(policy: Policy) -> None:
    for op in ("network-outbound", "network-inbound", "network-bind"):
        assert policy.op(op, path="/private/var/run/mDNSResponder") == "deny"
        assert policy.op(op) == "deny"
    assert "(allow network" not in policy.text


def test_mach_lookups_are_a_short_list(policy: Policy) -> None:
    allowed = [s for s, _ in MACH_SERVICES]
    assert len(allowed) <= 4
    for service in allowed:
        assert policy.op("mach-lookup", name=service) == "allow"
    for service in (
        "com.apple.cfprefsd.daemon",
        "com.apple.SecurityServer",
        "com.apple.coreservices.launchservicesd",
        "com.apple.pasteboard.1",
        "com.apple.tccd",
    ):
        assert policy.op("mach-lookup", name=service) == "deny", service


def test_processes_signals_and_sysctls(policy: Policy) -> None:
    assert policy.op("process-fork") == "allow"
    assert policy.op("process-exec", path="/bin/ls") == "allow"
    assert policy.op("signal", target="same-sandbox") == "allow"
    assert policy.op("signal", target="others") == "deny"
    assert policy.op("process-info-pidinfo", target="others") == "deny"
    assert policy.op("sysctl-read", name="hw.ncpu") == "allow"
    assert policy.op("sysctl-read", name="kern.procargs2") == "deny"
    assert policy.op("ipc-posix-sem", name="/mp-xyz") == "allow"
    assert policy.op("ipc-posix-shm-read-data", name="apple.shm.notification_center") == "allow"
    assert policy.op("ipc-posix-shm-write-data", name="x") == "deny"
    ptys = ("com.apple.sandbox.pty",)
    assert policy.op("file-ioctl", path="/dev/ttys003") == "deny"
    assert policy.op("file-ioctl", path="/dev/ttys003", extensions=ptys) == "allow"


# ---- paths and escaping --------------------------------------------------------------------


def strings_of(forms: Any) -> list[str]:
    if isinstance(forms, Text):
        return [str(forms)]
    if isinstance(forms, list):
        return [s for f in forms for s in strings_of(f)]
    return []


def test_sbpl_string_escapes_quotes_and_backslashes() -> None:
    assert sbpl_string("/a/b") == '"/a/b"'
    assert sbpl_string('/a"b') == r'"/a\"b"'
    assert sbpl_string("/a\\b") == r'"/a\\b"'
    assert sbpl_string('\\"') == r'"\\\""'
    with pytest.raises(ValueError):
        sbpl_string("/a\0b")
    with pytest.raises(TypeError):
        sbpl_string(b"/a")  # type: ignore[arg-type]


@given(st.text(min_size=0, max_size=60).filter(lambda s: "\0" not in s))
@settings(max_examples=300, deadline=None)
def test_sbpl_string_round_trips_through_the_reader(value: str) -> None:
    assert parse_sbpl(f"(x {sbpl_string(value)})") == [["x", value]]


HOSTILE = [
    '/Users/me/a"b',
    "/Users/me/back\\slash",
    '/Users/me/end\\"quote',
    "/Users/me/tail\\",
    '/Users/me/x")(allow default)(literal "',
    '/Users/me/x"))\n(allow file-write* (subpath "/"))\n; "',
    '/Users/me/semi;colon (paren) #hash #"raw',
    "/Users/me/new\nline\ttab\rcr",
    "/Users/me/\u00e9t\u00e9 \u6f22\u5b57 \U0001f600",
    "/Users/me/bad\udcffbytes",
    "/Users/me/.*+?[]{}|^$",
]


@pytest.mark.parametrize("workspace", HOSTILE)
def test_hostile_paths_stay_data(workspace: str) -> None:
    masked = f"{workspace}/.env"
    root = f'{workspace}/tool\\chain"x'
    p = Policy(
        profile(
            workspace=workspace,
            scratch=f'/private/tmp/s"c\\r{workspace[-3:]}',
            masked_paths=[masked],
            toolchain_roots=[f"{HOME}/{root.rsplit('/', 1)[1]}"],
        )
    )
    # the text parses, every rule is an allow or a deny, and the paths come back verbatim
    assert p.forms[:2] == [["version", "1"], ["deny", "default"]]
    assert {f[0] for f in p.forms[1:]} == {"allow", "deny"}
    strings = strings_of(p.forms)
    assert workspace in strings and masked in strings
    assert ["allow", "default"] not in p.forms
    # and they mean what they say
    assert p.write(f"{workspace}/src/x") == "allow"
    assert p.read(masked) == "deny"
    assert p.create(f"{workspace}/.git") == "deny"
    assert p.create(f"{workspace}/.GIT") == "deny"
    assert p.write("/etc/passwd") == "deny" and p.write(f"{HOME}/x") == "deny"
    # non-UTF-8 names go back to their bytes when the profile becomes an argument
    if "\udcff" in workspace:
        assert b"bad\xffbytes" in os.fsencode(p.text)


@pytest.mark.parametrize(
    "bad",
    ["relative/ws", "/Users/me/proj/", "/Users/me/../me/proj", "/Users/./me", "//Users/me", "/"],
)
def test_paths_must_be_absolute_and_normalized(bad: str) -> None:
    with pytest.raises(ValueError):
        seatbelt_profile(bad, SCRATCH, home=HOME)
    if bad != "/":
        with pytest.raises(ValueError):
            seatbelt_profile(WS, SCRATCH, home=HOME, masked_paths=[bad])


def test_profile_without_home_or_extras_is_complete() -> None:
    p = Policy(seatbelt_profile("/opt/work", "/private/tmp/a3s-run-1", home=None))
    assert p.write("/opt/work/a") == "allow"
    assert p.create("/opt/work/.git") == "deny"
    assert p.read("/Users/anyone/.ssh/id_rsa") == "deny"
    assert p.op("network-outbound") == "deny"


# ---- the environment: a port of native/src/env.c ------------------------------------------


def test_env_injection_and_secret_names() -> None:
    for name in (
        "BASH_ENV",
        "LD_PRELOAD",
        "DYLD_INSERT_LIBRARIES",
        "PYTHONPATH",
        "XDG_CONFIG_HOME",
    ):
        assert env_name_is_injection(name), name
    for name in ("GITHUB_TOKEN", "aws_secret_access_key", "STRIPE_KEY", "signingkey", "HTTP_PROXY"):
        assert env_name_is_secret(name), name
    for name in ("KEYBOARD", "MONKEYS", "PATH", "LANG", "KE"):
        assert not env_name_is_secret(name), name


def test_env_secret_values() -> None:
    secrets = [
        "ghp_" + "a" * 36,
        "sk-" + "A" * 20,
        "sk-ant-x",
        "AIza" + "b" * 35,
        "eyJhbGci.eyJzdWIi.c2lnbmF0",
        "prefix AKIAABCDEFGHIJKLMNOP suffix",
        "https://user:pw@example.com/x",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "xx PRIVATE KEY----- yy",
    ]
    for value in secrets:
        assert env_value_is_secret(value), value
    plain = [
        "sk-short",
        "AIza-short",
        "eyJ.a.b",
        "https://example.com/user@x",
        "AKIAshort",
        "hello",
    ]
    for value in plain:
        assert not env_value_is_secret(value), value


def test_build_env_allowlists_scrubs_and_points_home_at_scratch() -> None:
    host = {
        "PATH": "/usr/bin:relative::/bin:.",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "LC_": "no",
        "HOME": "/Users/me",
        "GITHUB_TOKEN": "x",
        "TERM": "ghp_" + "z" * 30,
        "FOO": "bar",
        "CARGO_HOME": "/Users/me/.cargo",
        "SSH_AUTH_SOCK": "/tmp/agent",
    }
    env = build_env(host, {"CI": "1", "LANG": "fr_FR"}, "/s/home")
    assert env == {
        "PATH": "/usr/bin:/bin",
        "LC_ALL": "C",
        "CARGO_HOME": "/Users/me/.cargo",
        "CI": "1",
        "LANG": "fr_FR",
        "HOME": "/s/home",
        "TMPDIR": "/s/home",
        "XDG_CONFIG_HOME": "/s/home/.config",
        "XDG_CACHE_HOME": "/s/home/.cache",
        "XDG_DATA_HOME": "/s/home/.local/share",
        "XDG_STATE_HOME": "/s/home/.local/state",
    }
    assert build_env({}, {}, "/h")["PATH"] == _seatbelt.DEFAULT_PATH
    assert build_env({"PATH": "rel:"}, {}, "/h")["PATH"] == _seatbelt.DEFAULT_PATH


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("LD_PRELOAD", "x", "not allowed"),
        ("HOME", "/x", "not allowed"),
        ("NODE_OPTIONS", "--require x", "not allowed"),
        ("MY_TOKEN", "x", "credential"),
        ("HARMLESS", "ghp_" + "a" * 36, "credential"),
        ("", "x", "invalid environment variable name"),
        ("A=B", "x", "invalid environment variable name"),
        ("A", "x\0y", "NUL"),
    ],
)
def test_per_call_variables_are_refused_not_dropped(name: str, value: str, match: str) -> None:
    with pytest.raises(SandboxArgumentError, match=match):
        check_extra_env(name, value)
    with pytest.raises(SandboxArgumentError):
        build_env({}, {name: value}, "/h")


def _c_process_host() -> Any:
    if not sys.platform.startswith("linux"):
        pytest.skip("the C core's process host runs on Linux")
    from codeward import _native
    from codeward.sandbox._locate import init_path

    init = init_path()
    if init is None:
        pytest.skip("a3s-init is not built")
    return _native, init


_C_WORKSPACE: list[str] = []


def _c_workspace() -> str:
    if not _C_WORKSPACE:
        _C_WORKSPACE.append(os.path.realpath(tempfile.mkdtemp(prefix="a3s-env-parity-")))
    return _C_WORKSPACE[0]


NAME_POOL = [
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_",
    "TERM",
    "TZ",
    "USER",
    "CI",
    "GOPATH",
    "VIRTUAL_ENV",
    "NVM_BIN",
    "FOO",
    "AUTHOR",
    "PYENV_VERSION",
    "SESSION_ID",
    "MONKEYS",
    "DISPLAY",
]
VALUE_POOL = [
    "plain",
    "/usr/bin:rel::/bin",
    "ghp_abc",
    "sk-" + "a" * 25,
    "sk-" + "a" * 19,
    "AIza" + "x" * 35,
    "AIza" + "x" * 34,
    "\u00e9" * 20 + "AIza",
    "eyJa.bbbb.cccc",
    "eyJabc.defg.hijk",
    "x AKIA0123456789ABCDEF y",
    "ASIA0123456789ABCDE",
    "http://u:p@h",
    "http://u@h:1",
    "s3://a b:c@d",
    "-----BEGIN X",
    "",
]


@given(
    st.dictionaries(st.sampled_from(NAME_POOL), st.sampled_from(VALUE_POOL), max_size=8),
    st.dictionaries(
        st.sampled_from(["CI", "LANG", "FOO", "PATH", "X_TOKEN", "LD_X"]),
        st.sampled_from(VALUE_POOL),
        max_size=3,
    ),
)
@settings(max_examples=60, deadline=None)
def test_build_env_matches_the_c_core(host: dict[str, str], extra: dict[str, str]) -> None:
    """The same host and per-call variables give the same environment as env.c."""
    native, init = _c_process_host()
    ws = _c_workspace()
    sandbox = native.Sandbox(
        ws, init, process_host=True, host_env=[f"{k}={v}" for k, v in host.items()]
    )
    entries = [f"{k}={v}" for k, v in extra.items()]
    try:
        ours: dict[str, str] | None = build_env(host, extra, "/SCRATCH")
    except SandboxArgumentError:
        ours = None
    try:
        raw = sandbox.exec(b"/usr/bin/env -0", entries, 10_000, 200, 1 << 20, -1)
    except native.NativeError as exc:
        assert exc.args[0] == "invalid"
        assert ours is None, exc.args[1]
        return
    assert ours is not None
    theirs = dict(e.split("=", 1) for e in raw["stdout"].decode().split("\0") if e)
    for added in ("PWD", "SHLVL", "_", "OLDPWD"):
        theirs.pop(added, None)
    scratch = theirs["TMPDIR"]
    theirs = {k: v.replace(scratch, "/SCRATCH") for k, v in theirs.items()}
    ours["HOME"] = host.get("HOME", "/SCRATCH")  # the process host keeps the real HOME
    if "HOME" not in host:
        theirs["HOME"] = "/SCRATCH"
    assert ours == theirs


NATIVE_SRC = Path(__file__).resolve().parent.parent / "native" / "src"


def c_array(file: str, name: str) -> list[str]:
    """The string literals of ``static const char *const NAME[] = {...}`` in a C source."""
    path = NATIVE_SRC / file
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    m = re.search(rf"\b{name}\[\](?:\[2\])?\s*=\s*\{{(.*?)\}};", text, re.S)
    assert m, name
    return re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))


@pytest.mark.parametrize(
    ("file", "array", "ours"),
    [
        ("env.c", "ALLOWED", _seatbelt.ENV_ALLOWED),
        ("env.c", "INJECTION", _seatbelt.ENV_INJECTION),
        ("env.c", "INJECTION_PREFIXES", _seatbelt.ENV_INJECTION_PREFIXES),
        ("env.c", "SECRET_NAMES", _seatbelt.ENV_SECRET_NAMES),
        ("env.c", "SECRET_WORDS", _seatbelt.ENV_SECRET_WORDS),
        ("env.c", "SECRET_VALUE_PREFIXES", _seatbelt.ENV_SECRET_VALUE_PREFIXES),
        ("credscan.c", "CRED_FILES", _seatbelt.CRED_FILES),
        ("credscan.c", "CRED_DIRS", _seatbelt.CRED_DIRS),
        ("credscan.c", "CRED_PAIRS", tuple(x for pair in _seatbelt.CRED_PAIRS for x in pair)),
        ("credscan.c", "SKIP_DIRS", _seatbelt.SKIP_DIRS),
        ("protected.c", "a3s_protected_dirs", _seatbelt.PROTECTED_DIRS),
        ("protected.c", "a3s_protected_files", _seatbelt.PROTECTED_FILES),
        ("sandbox_linux.c", "TOOLCHAIN_VARS", _seatbelt.TOOLCHAIN_VARS),
        ("sandbox_linux.c", "HOME_SECRETS", _seatbelt.HOME_SECRETS[:-1]),  # + Library/Keychains
    ],
)
def test_lists_are_the_c_cores(file: str, array: str, ours: tuple[str, ...]) -> None:
    assert list(ours) == c_array(file, array)


def test_default_path_is_the_c_cores() -> None:
    header = NATIVE_SRC / "env.h"
    if not header.exists():
        pytest.skip("no C sources in this checkout")
    assert f'"{_seatbelt.DEFAULT_PATH}"' in header.read_text()


# ---- the credential scan: native/src/credscan.c's rules --------------------------------------


def make_tree(root: Path, files: list[str]) -> None:
    for rel in files:
        path = root / rel
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x")


def scan(root: Path, **kwargs: Any) -> set[tuple[str, str]]:
    return {(tag, os.path.relpath(p, root)) for tag, p in CredentialScan(str(root), **kwargs).run()}


def test_credential_scan_finds_the_same_names_as_the_c_scanner(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        [
            ".env",
            ".ENV.local",
            "a/.envrc",
            "a/.environment/",
            ".netrc",
            "b/.NPMRC",
            "b/_netrc",
            ".pypirc",
            ".git-credentials",
            ".claude.json",
            ".pgpass",
            ".boto",
            ".s3cfg",
            "c/.ssh/id_rsa",
            ".gnupg/",
            "d/.AWS/credentials",
            ".a3s/os-auth.json",
            ".codex/auth.json",
            ".claude/.credentials.json",
            ".docker/config.json",
            "e/.kube/config",
            ".cargo/credentials.toml",
            ".cargo/credentials",
            ".config/gh/hosts.yml",
            # not credentials
            "env",
            ".en",
            "src/main.py",
            ".docker/daemon.json",
            "config.json",
            ".kube/cache/x",
            ".config/nvim/init.lua",
            # not scanned
            ".git/.env",
            "node_modules/pkg/.env",
            "target/.env",
            ".venv/.env",
            "x/__pycache__/.env",
            "NODE_MODULES/.npmrc",
        ],
    )
    (tmp_path / ".pypirc2").symlink_to(tmp_path / ".pypirc")
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / ".ssh").symlink_to(tmp_path / "c" / ".ssh")
    assert scan(tmp_path) == {
        ("f", ".env"),
        ("f", ".ENV.local"),
        ("f", "a/.envrc"),
        ("d", "a/.environment"),
        ("f", ".netrc"),
        ("f", "b/.NPMRC"),
        ("f", "b/_netrc"),
        ("f", ".pypirc"),
        ("f", ".git-credentials"),
        ("f", ".claude.json"),
        ("f", ".pgpass"),
        ("f", ".boto"),
        ("f", ".s3cfg"),
        ("d", "c/.ssh"),
        ("d", ".gnupg"),
        ("d", "d/.AWS"),
        ("f", ".a3s/os-auth.json"),
        ("f", ".codex/auth.json"),
        ("f", ".claude/.credentials.json"),
        ("f", ".docker/config.json"),
        ("f", "e/.kube/config"),
        ("f", ".cargo/credentials.toml"),
        ("f", ".cargo/credentials"),
        ("d", ".config/gh"),
        ("l", "f/.ssh"),  # a symlink under a credential directory's name
        ("f", "NODE_MODULES/.npmrc"),  # skipped names are exact: this is not node_modules
    }


def test_credential_scan_rereads_only_changed_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(tmp_path, ["a/b/c/file", "a/.env", "d/e/f"])
    scanner = CredentialScan(str(tmp_path))
    real_scandir = os.scandir
    reads: list[int] = []

    def counting_scandir(fd: Any) -> Any:
        reads.append(fd)
        return real_scandir(fd)

    monkeypatch.setattr(os, "scandir", counting_scandir)
    later = time.time_ns() + 10_000_000_000  # every directory is old enough to trust
    monkeypatch.setattr(time, "time_ns", lambda: later)
    assert {os.path.relpath(p, tmp_path) for _, p in scanner.run()} == {"a/.env"}
    assert len(reads) == 6  # the root, a, a/b, a/b/c, d, d/e
    reads.clear()
    assert {os.path.relpath(p, tmp_path) for _, p in scanner.run()} == {"a/.env"}
    assert reads == []  # nothing changed: nothing re-read
    (tmp_path / "d" / "e" / ".npmrc").write_text("token")
    assert {os.path.relpath(p, tmp_path) for _, p in scanner.run()} == {"a/.env", "d/e/.npmrc"}
    assert len(reads) == 1  # d/e alone


def test_credential_scan_rereads_racy_directories(tmp_path: Path) -> None:
    scanner = CredentialScan(str(tmp_path))
    assert scanner.run() == []
    (tmp_path / ".env").write_text("x")  # within the same second: must still be seen
    assert scanner.run() == [("f", str(tmp_path / ".env"))]


def test_credential_scan_is_bounded(tmp_path: Path) -> None:
    make_tree(tmp_path, [f"d{i}/" for i in range(10)])
    assert scan(tmp_path, max_dirs=11) == set()
    with pytest.raises(_seatbelt._Refused, match="more than 5 directories"):
        scan(tmp_path, max_dirs=5)


def test_credential_scan_refuses_what_it_cannot_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(tmp_path, ["a/b/c/file"])
    monkeypatch.setattr(_seatbelt, "_MAX_DEPTH", 3)
    assert scan(tmp_path) == set()  # a/b/c has no subdirectory: deep enough
    (tmp_path / "a" / "b" / "c" / "d").mkdir()
    with pytest.raises(_seatbelt._Refused, match="deeper than 3 levels"):
        scan(tmp_path)
    monkeypatch.setattr(_seatbelt, "_MAX_DEPTH", 1024)
    monkeypatch.setattr(_seatbelt, "_MAX_PATH", len(str(tmp_path)) + 6)
    with pytest.raises(_seatbelt._Refused, match="longer than"):
        scan(tmp_path)


def test_credential_scan_of_a_deep_tree_needs_no_recursion(tmp_path: Path) -> None:
    import resource
    import subprocess

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    tree = tmp_path / "deep"
    tree.mkdir()
    fd = os.open(tree, os.O_RDONLY)
    try:
        for _ in range(1100):  # deeper than Python's recursion limit
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        os.close(os.open(".env", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        os.close(fd)
        fd = -1
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
        with pytest.raises(_seatbelt._Refused, match=r"deeper than 1024 levels|open files"):
            scan(tree)
    finally:
        if fd >= 0:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        subprocess.run(["rm", "-rf", str(tree)], check=False)  # rm(1) is not recursive


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_credential_scan_refuses_an_unreadable_directory(tmp_path: Path) -> None:
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0)
    try:
        with pytest.raises(_seatbelt._Refused, match="cannot"):
            scan(tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o700)


def test_hard_links_inside_protected_and_masked_directories_refuse_the_run(tmp_path: Path) -> None:
    git = tmp_path / ".git"
    make_tree(tmp_path, [".git/objects/ab/cdef", ".git/config", ".ssh/id_rsa", "outside"])
    os.link(git / "objects" / "ab" / "cdef", tmp_path / "shared-object")
    assert _seatbelt._linked_file(str(git), True) is None  # objects are shared by clones
    assert _seatbelt._linked_file(str(git), False) == str(git / "objects" / "ab" / "cdef")
    os.link(git / "config", tmp_path / "config-alias")
    with pytest.raises(_seatbelt._Refused, match=r"\.git/config has extra hard links.*protected"):
        _seatbelt._refuse_linked_files(str(git), True, "protected")
    os.link(tmp_path / ".ssh" / "id_rsa", tmp_path / "key-alias")
    with pytest.raises(_seatbelt._Refused, match="reach this credential file"):
        _seatbelt._refuse_linked_files(str(tmp_path / ".ssh"), False, "credential")
    assert _seatbelt._linked_file(str(tmp_path / "missing"), False) is None


def test_hard_link_walk_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_tree(tmp_path, [f"d/f{i}" for i in range(20)])
    monkeypatch.setattr(_seatbelt, "LINK_WALK_BUDGET", 10)
    with pytest.raises(_seatbelt._Refused, match="more than 10 entries"):
        _seatbelt._linked_file(str(tmp_path / "d"), False)


# ---- the sandbox plumbing, through a stand-in for sandbox-exec ----------------------------


@pytest.fixture
def fake_exec(tmp_path: Path) -> tuple[str, Path]:
    """A 'sandbox-exec' that records the profile and runs the command unconfined."""
    dump = tmp_path / "profile.sb"
    script = tmp_path / "fake-sandbox-exec"
    script.write_text(
        "#!/bin/sh\n"
        '[ "$1" = "-p" ] || { echo "sandbox-exec: usage" >&2; exit 64; }\n'
        f"printf '%s' \"$2\" > '{dump}'\n"
        "shift 2\n"
        'exec "$@"\n'
    )
    script.chmod(0o755)
    return str(script), dump


@pytest.fixture
def env_home(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C",
        "API_TOKEN": "hunter2",
        "AWS_SECRET_ACCESS_KEY": "x",
    }


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def make_sandbox(
    ws: Path, fake: tuple[str, Path], host_env: dict[str, str], tmp_path: Path
) -> SeatbeltBashSandbox:
    scratch_parent = tmp_path / "scratch"
    scratch_parent.mkdir(exist_ok=True)
    return SeatbeltBashSandbox(
        ws, sandbox_exec=fake[0], host_env=host_env, scratch_parent=str(scratch_parent)
    )


def test_commands_run_in_the_workspace_with_a_scrubbed_environment(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    (workspace / ".env").write_text("SECRET=1")
    sb = make_sandbox(workspace, fake_exec, env_home, tmp_path)
    out = sb.exec(
        'pwd -P; echo "$HOME"; echo "${BASH_ENV-unset}"; echo $LINENO; env', env={"CI": "1"}
    )
    assert out.ok and out.exit_code == 0 and out.setup_error is None
    assert out.backend == "seatbelt" and out.sandboxed
    lines = out.stdout.splitlines()
    assert lines[0] == os.path.realpath(workspace)
    home = lines[1]
    scratch_parent = os.path.realpath(tmp_path / "scratch")
    assert home.startswith(f"{scratch_parent}/a3s-run-") and home.endswith("/home")
    assert lines[2] == "unset"  # the readiness hook leaves nothing behind
    assert lines[3] == "1"  # ... and does not shift line numbers
    assert "API_TOKEN" not in out.stdout and "AWS_SECRET" not in out.stdout
    assert "CI=1" in out.stdout and f"TMPDIR={home}" in out.stdout
    assert not os.path.exists(home)  # the scratch dir is removed afterwards
    text = fake_exec[1].read_text()
    p = Policy(text)
    ws = os.path.realpath(workspace)
    assert p.read(f"{ws}/.env") == "deny"
    assert p.write(f"{ws}/x") == "allow" and p.create(f"{ws}/.git") == "deny"
    assert p.read(f"{env_home['HOME']}/x") == "deny"


def test_the_scratch_dir_is_removed_even_when_made_unreadable(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    sb = make_sandbox(workspace, fake_exec, env_home, tmp_path)
    out = sb.exec(
        'mkdir -p "$HOME/a/b" && touch "$HOME/a/b/f" && ln -s / "$HOME/root" && '
        'chmod 000 "$HOME/a/b" "$HOME/a"'
    )
    assert out.exit_code == 0
    assert os.listdir(tmp_path / "scratch") == []
    assert os.path.exists("/bin/sh")  # the symlink was removed, not followed


def test_a_sandbox_that_does_not_start_is_a_setup_error(
    tmp_path: Path, workspace: Path, env_home: dict[str, str]
) -> None:
    failing = tmp_path / "failing-sandbox-exec"
    failing.write_text("#!/bin/sh\necho 'sandbox-exec: unbound variable: x' >&2\nexit 65\n")
    failing.chmod(0o755)
    sb = SeatbeltBashSandbox(workspace, sandbox_exec=str(failing), host_env=env_home)
    out = sb.exec("echo hi")
    assert out.exit_code == 125 and not out.ok
    assert out.setup_error == "sandbox-exec: unbound variable: x"
    silent = tmp_path / "silent-sandbox-exec"
    silent.write_text("#!/bin/sh\nexit 0\n")
    silent.chmod(0o755)
    out = SeatbeltBashSandbox(workspace, sandbox_exec=str(silent), host_env=env_home).exec("true")
    assert out.exit_code == 125 and out.setup_error == "the sandbox did not start"


def test_the_command_status_is_its_own(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    sb = make_sandbox(workspace, fake_exec, env_home, tmp_path)
    assert sb.exec("exit 125").exit_code == 125
    assert sb.exec("exit 125").setup_error is None
    assert sb.exec("kill -TERM $$").exit_code == 143
    out = sb.exec("echo -n x; (", timeout_ms=5000)
    assert out.exit_code == 2 and "syntax error" in out.stderr and out.setup_error is None
    out = sb.exec("sleep 30", timeout_ms=300, kill_grace_ms=300)
    assert out.exit_code == 124 and out.timed_out and out.setup_error is None
    event = threading.Event()
    threading.Timer(0.2, event.set).start()
    out = sb.exec("sleep 30", cancel=event)
    assert out.cancelled and out.exit_code == 124
    out = sb.exec("head -c 100000 /dev/zero", max_output_bytes=10)
    assert out.truncated and out.total_bytes == 100_000


def hard_link(ws: Path, name: str) -> None:
    (ws / name).write_text("x")
    os.link(ws / name, ws / f"{name}-alias")


@pytest.mark.parametrize(
    ("prepare", "match"),
    [
        (lambda ws: (ws / ".git").symlink_to("/tmp"), r"\.git is a symlink; a protected name"),
        (lambda ws: (ws / ".Claude").symlink_to("/tmp"), r"\.Claude is a symlink"),
        (lambda ws: hard_link(ws, ".bashrc"), "has 2 hard links; another name could write"),
        (lambda ws: hard_link(ws, ".env"), r"credential file .*\.env has 2 hard links"),
    ],
)
def test_refusals_are_setup_errors(
    tmp_path: Path,
    workspace: Path,
    fake_exec: tuple[str, Path],
    env_home: dict[str, str],
    prepare: Any,
    match: str,
) -> None:
    prepare(workspace)
    out = make_sandbox(workspace, fake_exec, env_home, tmp_path).exec("echo ran")
    assert out.exit_code == 125 and out.stdout == ""
    assert out.setup_error is not None and re.search(match, out.setup_error), out.setup_error


def test_linked_files_in_a_protected_directory_are_a_setup_error(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text("{}")
    os.link(workspace / ".claude" / "settings.json", workspace / "innocent.json")
    out = make_sandbox(workspace, fake_exec, env_home, tmp_path).exec("echo ran")
    assert out.exit_code == 125 and out.stdout == ""
    assert out.setup_error is not None and "settings.json has extra hard links" in out.setup_error


def test_protected_case_variants_worktrees_and_masked_symlinks_reach_the_profile(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    gitdir = workspace / "repo.git" / "worktrees" / "ws"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (workspace / ".git").write_text("gitdir: ./repo.git/worktrees/ws\n")
    (workspace / ".VSCode").mkdir()
    (workspace / "real-secret").write_text("x")
    (workspace / ".npmrc").symlink_to(workspace / "real-secret")
    out = make_sandbox(workspace, fake_exec, env_home, tmp_path).exec("true")
    assert out.ok
    p = Policy(fake_exec[1].read_text())
    ws = os.path.realpath(workspace)
    assert p.write(f"{ws}/.VSCode/settings.json") == "deny"
    assert p.write(f"{ws}/repo.git/worktrees/ws/HEAD") == "deny"
    assert p.write(f"{ws}/repo.git/objects/x") == "deny"  # the common dir
    assert p.read(f"{ws}/real-secret") == "deny"  # the target of a credential-named symlink
    assert p.read(f"{ws}/.npmrc") == "deny"


def test_a_git_pointer_is_never_followed_out_of_the_workspace(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    """`.git` naming a directory outside (an unpacked archive's, say) re-allows nothing:
    it used to make a home directory readable."""
    outside = Path(env_home["HOME"]) / ".ssh"
    outside.mkdir()
    (outside / "commondir").write_text(f"{env_home['HOME']}\n")
    (workspace / ".git").write_text(f"gitdir: {outside}\n")
    out = make_sandbox(workspace, fake_exec, env_home, tmp_path).exec("true")
    assert out.ok
    p = Policy(fake_exec[1].read_text())
    home = os.path.realpath(env_home["HOME"])
    assert p.read(f"{home}/.ssh/id_ed25519") == "deny"
    assert p.read(f"{home}/notes.txt") == "deny"


def test_a_fifo_where_a_git_pointer_is_read_does_not_hang(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    (workspace / "g").mkdir()
    os.mkfifo(workspace / "g" / "commondir")
    (workspace / ".git").write_text("gitdir: ./g\n")
    done, unblocked = threading.Event(), threading.Event()

    def unblock() -> None:  # only if the profile builder hangs on the FIFO: then it fails
        if not done.wait(20):
            unblocked.set()
            with open(workspace / "g" / "commondir", "w") as f:
                f.write("x\n")

    threading.Thread(target=unblock, daemon=True).start()
    out = make_sandbox(workspace, fake_exec, env_home, tmp_path).exec("true")
    done.set()
    assert out.ok and not unblocked.is_set()


def test_a_credential_name_linked_to_the_workspace_does_not_deny_it(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".env").symlink_to("..")
    (workspace / "README").write_text("x")
    out = make_sandbox(workspace, fake_exec, env_home, tmp_path).exec("true")
    assert out.ok
    p = Policy(fake_exec[1].read_text())
    assert p.read(f"{os.path.realpath(workspace)}/README") == "allow"


def test_per_call_variables_are_validated_before_running(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    sb = make_sandbox(workspace, fake_exec, env_home, tmp_path)
    for env in ({"LD_PRELOAD": "/x.so"}, {"DYLD_INSERT_LIBRARIES": "x"}, {"GH_TOKEN": "x"}):
        with pytest.raises(SandboxArgumentError):
            sb.exec("true", env=env)
    bad: list[dict[str, Any]] = [{"timeout_ms": 0}, {"max_output_bytes": 0}, {"kill_grace_ms": -1}]
    for kwargs in bad:
        with pytest.raises(SandboxArgumentError):
            sb.exec("true", **kwargs)
    with pytest.raises(SandboxArgumentError):
        sb.exec("echo \0")
    with pytest.raises(SandboxArgumentError):
        sb.exec(b"true")  # type: ignore[arg-type]


def test_construction_checks_the_workspace_and_sandbox_exec(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path]
) -> None:
    link = tmp_path / "link"
    link.symlink_to(workspace)
    with pytest.raises(SandboxUnavailable, match="symlink"):
        SeatbeltBashSandbox(link, sandbox_exec=fake_exec[0])
    with pytest.raises(SandboxArgumentError):
        SeatbeltBashSandbox(tmp_path / "missing", sandbox_exec=fake_exec[0])
    with pytest.raises(SandboxUnavailable, match="missing or not executable"):
        SeatbeltBashSandbox(workspace, sandbox_exec=str(tmp_path / "nope"))
    sb = SeatbeltBashSandbox(workspace, sandbox_exec=fake_exec[0])
    assert sb.backend == "seatbelt" and sb.sandboxed
    assert sb.workspace == os.path.realpath(workspace)
    assert "SeatbeltBashSandbox" in repr(sb)


def test_a_workspace_that_disappears_is_a_setup_error(
    tmp_path: Path, workspace: Path, fake_exec: tuple[str, Path], env_home: dict[str, str]
) -> None:
    sb = make_sandbox(workspace, fake_exec, env_home, tmp_path)
    shutil.rmtree(workspace)
    out = sb.exec("true")
    assert out.exit_code == 125 and out.setup_error


def test_probe_rejects_a_sandbox_exec_that_does_not_enforce(fake_exec: tuple[str, Path]) -> None:
    verdict = seatbelt_probe(fake_exec[0])
    assert verdict is not None and "self-test failed" in verdict
    assert "write outside the workspace" in verdict
    assert seatbelt_probe(fake_exec[0]) == verdict  # cached


def test_probe_reports_a_missing_sandbox_exec(tmp_path: Path) -> None:
    verdict = seatbelt_probe(str(tmp_path / "no-sandbox-exec"))
    assert verdict is not None and "missing" in verdict


def test_python_process_host_keeps_home_and_says_unsandboxed(
    tmp_path: Path, workspace: Path, env_home: dict[str, str]
) -> None:
    sb = PythonProcessHostBashSandbox(workspace, host_env=env_home, scratch_parent=str(tmp_path))
    out = sb.exec('echo "$HOME"; echo "$TMPDIR"; env')
    assert out.exit_code == 0 and out.backend == "process-host" and not out.sandboxed
    home, tmpdir = out.stdout.splitlines()[:2]
    assert home == env_home["HOME"]
    assert tmpdir.startswith(f"{os.path.realpath(tmp_path)}/a3s-run-")
    assert not os.path.exists(tmpdir)
    assert "API_TOKEN" not in out.stdout
    assert sb.exec("sleep 30", timeout_ms=200).exit_code == 124


# ---- the real boundary (macOS only) --------------------------------------------------------

darwin = pytest.mark.skipif(sys.platform != "darwin", reason="Seatbelt exists on macOS only")


@pytest.fixture
def real(tmp_path: Path) -> tuple[SeatbeltBashSandbox, Path, Path]:
    ws = Path(os.path.realpath(tmp_path)) / "ws"
    home = Path(os.path.realpath(tmp_path)) / "home"
    for d in (ws, home / ".ssh", home / "tool" / "bin"):
        d.mkdir(parents=True)
    (home / ".ssh" / "id_test").write_text("SECRET-KEY\n")
    (home / "tool" / "bin" / "hello").write_text("#!/bin/sh\necho tool-ok\n")
    (home / "tool" / "bin" / "hello").chmod(0o755)
    host_env = dict(os.environ)
    host_env.update(HOME=str(home), PATH=f"{home}/tool/bin:/usr/bin:/bin")
    return SeatbeltBashSandbox(ws, host_env=host_env), ws, home


@darwin
def test_real_probe_passes() -> None:
    assert seatbelt_probe() is None


@darwin
def test_real_workspace_is_writable_and_the_rest_is_not(
    real: tuple[SeatbeltBashSandbox, Path, Path], tmp_path: Path
) -> None:
    sb, ws, _ = real
    out = sb.exec("echo hi > a.txt && cat a.txt && echo x > $HOME/scratch.txt && echo ok")
    assert out.stdout == "hi\nok\n", out
    outside = Path(os.path.realpath(tmp_path)) / "outside.txt"
    out = sb.exec(f"echo x > {outside}")
    assert out.exit_code != 0 and not outside.exists()
    for name in (".git", ".GIT", ".bashrc", ".mcp.json"):
        out = sb.exec(f"mkdir {name} || echo x > {name}")
        assert not (ws / name).exists(), name
    assert sb.exec("echo x > ~/../escape").exit_code != 0


@darwin
def test_real_credentials_are_unreadable(real: tuple[SeatbeltBashSandbox, Path, Path]) -> None:
    sb, ws, home = real
    (ws / ".env").write_text("TOKEN=abc\n")
    out = sb.exec(f"cat {home}/.ssh/id_test; cat .env; cat /etc/master.passwd; echo done")
    assert "SECRET-KEY" not in out.stdout and "TOKEN=abc" not in out.stdout
    assert out.stdout.endswith("done\n")
    out = sb.exec(f"ln {home}/.ssh/id_test stolen; cat stolen; mv . ../moved; ln .env e2; cat e2")
    assert "SECRET-KEY" not in out.stdout and "TOKEN=abc" not in out.stdout
    assert sb.exec("hello").stdout == "tool-ok\n"  # a toolchain under HOME still runs


@darwin
def test_real_network_is_denied(real: tuple[SeatbeltBashSandbox, Path, Path]) -> None:
    import socket

    sb, _, _ = real
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        sb.exec(f"(exec 3<>/dev/tcp/127.0.0.1/{port}); /usr/bin/nc -z -w 2 127.0.0.1 {port}")
        with pytest.raises(BlockingIOError):
            listener.accept()
    out = sb.exec("/usr/bin/curl -sS -m 5 https://example.com; echo rc=$?")
    assert "rc=0" not in out.stdout


@darwin
def test_real_unix_sockets_are_denied(
    real: tuple[SeatbeltBashSandbox, Path, Path], tmp_path: Path
) -> None:
    import socket

    sb, _, _ = real
    path = str(Path(os.path.realpath(tmp_path)) / "s.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        listener.listen(1)
        listener.setblocking(False)
        sb.exec(f"/usr/bin/nc -U -w 1 {path} < /dev/null")
        with pytest.raises(BlockingIOError):
            listener.accept()


@darwin
def test_real_toolchains_work(real: tuple[SeatbeltBashSandbox, Path, Path]) -> None:
    sb, _, _ = real
    out = sb.exec("id -un && /usr/bin/python3 -c 'import os; print(os.getcwd())' && git --version")
    assert out.exit_code == 0, out


def test_stat_helpers_are_consistent(tmp_path: Path) -> None:
    # the scan and the refusals rely on lstat never following symlinks
    (tmp_path / "l").symlink_to(tmp_path / "missing")
    assert stat.S_ISLNK(os.lstat(tmp_path / "l").st_mode)
