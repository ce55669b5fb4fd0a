"""The workspace credential rule refuses every name the sandbox's credential scan masks.

The bash sandbox hides credential files with the lists of native/src/credscan.c;
the in-process tools refuse them with workspace_reason. A name the sandbox
masks but the tools could read would be a hole, so the C lists are read here
and each of their names is checked, in the case variants a case-insensitive
filesystem equates, at the top and deeper in the tree.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codeward._errors import CredentialBoundaryError
from codeward.workspace import Workspace, workspace_reason

CREDSCAN = Path(__file__).resolve().parents[2] / "native" / "src" / "credscan.c"


def c_strings(name: str) -> list[str]:
    """The string literals of ``static const char *const NAME[]... = {...};`` in credscan.c."""
    if not CREDSCAN.exists():
        pytest.skip(f"{CREDSCAN} is not in this checkout")
    text = re.sub(r"/\*.*?\*/", "", CREDSCAN.read_text(), flags=re.S)
    m = re.search(rf"\b{name}\[\](?:\[2\])?\s*=\s*\{{(.*?)\}};", text, re.S)
    assert m, name
    return re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))


def c_pairs() -> list[tuple[str, str]]:
    flat = c_strings("CRED_PAIRS")
    return list(zip(flat[::2], flat[1::2], strict=True))


def variants(parts: tuple[str, ...]) -> list[tuple[str, ...]]:
    """``parts`` as given, upper-cased, and below two ordinary directories."""
    return [parts, tuple(p.upper() for p in parts), ("src", "deep", *parts)]


def test_the_c_lists_are_read():
    assert ".netrc" in c_strings("CRED_FILES") and ".ssh" in c_strings("CRED_DIRS")
    assert (".config", "gh") in c_pairs()


def test_every_masked_file_name_is_refused():
    for name in c_strings("CRED_FILES"):
        for parts in variants((name,)):
            assert workspace_reason(parts) is not None, parts


def test_every_masked_directory_and_what_is_below_it_is_refused():
    for name in c_strings("CRED_DIRS"):
        for parts in variants((name,)) + variants((name, "key")) + variants((name, "a", "b")):
            assert workspace_reason(parts) is not None, parts


def test_every_masked_pair_is_refused():
    for parent, name in c_pairs():
        for parts in variants((parent, name)):
            assert workspace_reason(parts) is not None, parts


@pytest.mark.parametrize(
    "rel",
    [".config/gh", ".config/gh/hosts.yml", ".config/gh/sub/x", "proj/.CONFIG/Gh/hosts.yml"],
)
def test_the_github_cli_directory_is_a_credential_directory(rel):
    reason = workspace_reason(tuple(rel.split("/")))
    assert reason is not None and "credential directory" in reason


@pytest.mark.parametrize(
    "rel", [".config/ghx/hosts.yml", ".config/other/gh", "gh/hosts.yml", "config/gh/hosts.yml"]
)
def test_near_misses_stay_allowed(rel):
    assert workspace_reason(tuple(rel.split("/"))) is None


def test_the_workspace_refuses_the_github_cli_tokens(tmp_path):
    root = tmp_path / "ws"
    (root / ".config" / "gh").mkdir(parents=True)
    (root / ".config" / "gh" / "hosts.yml").write_text("oauth_token: gho_x\n")
    (root / ".config" / "other.toml").write_text("fine\n")
    ws = Workspace(root)
    with pytest.raises(CredentialBoundaryError):
        ws.open_file(".config/gh/hosts.yml")
    with pytest.raises(CredentialBoundaryError):
        ws.resolve(".config/gh")
    steps = {s.relpath: s for s in ws.walk()}
    assert steps[".config"].files == ["other.toml"] and steps[".config"].omitted == 1
    assert ".config/gh" not in steps
