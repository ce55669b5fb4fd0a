"""The permission-policy benchmark workload: a 200-rule policy and 20,000 tool calls.

Everything here is deterministic: the rules are a fixed list, and the calls are
drawn from a ``random.Random`` seeded with :data:`SEED`, so every run (and
every machine) benchmarks exactly the same inputs. Nothing in this module
imports codeward; run.py feeds the output to the policy and to the baselines.

The mix is modelled on what a coding agent actually sends:

* ~40% ``bash``: short commands (``ls``, ``git status``), typical build and
  test commands with flags, ``&&``/``|`` chains, and a few long heredoc
  scripts (up to a few KiB);
* ~32% file tools (``read``, ``write``, ``edit``, ``ls``) on paths of depth
  1-8, some absolute, some with ``./``, ``..`` or ``\\`` that need
  normalizing, and a few multi-file reads;
* ~10% search (``grep``, ``glob``, ``bm25``, ``search`` with a mode);
* ~13% MCP tools (``mcp__github__create_issue`` ...) with nested JSON args;
* ~5% other JSON-argument tools (``webfetch``, ``task``, ``todowrite``).

Some calls hit deny rules, many hit allow rules, some ask, and some match
nothing (they fall through to the default), so every branch of the
evaluation is exercised.
"""

from __future__ import annotations

import random
from typing import Any

SEED = 0xA35C0DE
N_CALLS = 20_000

# --------------------------------------------------------------------------
# The policy
# --------------------------------------------------------------------------

_DENY_CORE = [
    "bash(rm -rf**)",
    "bash(rm -fr**)",
    "bash(sudo**)",
    "bash(git push --force**)",
    "bash(git push -f**)",
    "bash(git reset --hard origin/**)",
    "bash(git clean -fdx**)",
    "bash(**| sh)",
    "bash(**| bash)",
    "bash(curl ** | sh**)",
    "bash(wget ** -O- | **)",
    "bash(chmod -R 777**)",
    "bash(chmod 777 /**)",
    "bash(dd if=**)",
    "bash(mkfs**)",
    "bash(:(){ :|:& };:)",
    "bash(**> /dev/sd**)",
    "bash(**/etc/shadow**)",
    "bash(**~/.ssh/id_**)",
    "bash(npm publish**)",
    "bash(cargo publish**)",
    "bash(docker system prune -a**)",
    "bash(kubectl delete namespace**)",
    "bash(terraform destroy**)",
    "bash(aws s3 rm ** --recursive**)",
    "read(**/.env)",
    "read(**/.env.*)",
    "read(**/*.pem)",
    "read(**/*.key)",
    "read(**/id_rsa*)",
    "read(**/id_ed25519*)",
    "read(/etc/shadow)",
    "read(/etc/sudoers**)",
    "read(/home/*/.ssh/**)",
    "read(**/.git/config)",
    "write(**/.env*)",
    "write(/etc/**)",
    "write(/usr/**)",
    "write(**/.git/**)",
    "write(**/*.pem)",
    "edit(**/.git/**)",
    "edit(**/.env*)",
    "edit(/etc/**)",
    "edit(**/package-lock.json)",
    "edit(**/Cargo.lock)",
    "edit(**/poetry.lock)",
    "ls(/home/*/.ssh**)",
    "grep(** /home/**/.ssh**)",
    "grep(**password** **)",
    "glob(**/.env** **)",
    "mcp__github__delete_repository",
    "mcp__github__delete_*",
    "mcp__*__drop_*",
    "mcp__jira__delete_issue",
    'mcp__postgres__query(**"sql":"DROP **)',
    'mcp__postgres__query(**"sql":"TRUNCATE **)',
    'mcp__slack__post_message(**"channel":"#general"**)',
    'webfetch(**"url":"http://**)',
    'webfetch(**"url":"https://pastebin.com/**)',
]

_ALLOW_CORE = [
    "bash(cargo test**)",
    "bash(cargo build**)",
    "bash(cargo check**)",
    "bash(cargo clippy**)",
    "bash(cargo fmt**)",
    "bash(npm run:*)",
    "bash(npm test**)",
    "bash(npm ci)",
    "bash(npx tsc**)",
    "bash(npx eslint **)",
    "bash(npx prettier --check **)",
    "bash(pytest**)",
    "bash(python -m pytest**)",
    "bash(python -m mypy **)",
    "bash(ruff check**)",
    "bash(ruff format**)",
    "bash(go test ./...)",
    "bash(go test **)",
    "bash(go build **)",
    "bash(make)",
    "bash(make test**)",
    "bash(make lint**)",
    "bash(git status**)",
    "bash(git diff**)",
    "bash(git log**)",
    "bash(git show **)",
    "bash(git branch**)",
    "bash(git add **)",
    "bash(git commit -m **)",
    "bash(git stash**)",
    "bash(git checkout -b **)",
    "bash(git fetch**)",
    "bash(ls)",
    "bash(ls **)",
    "bash(pwd)",
    "bash(cat **)",
    "bash(head **)",
    "bash(tail **)",
    "bash(wc **)",
    "bash(rg **)",
    "bash(grep -r**)",
    "bash(find . -name **)",
    "bash(echo **)",
    "bash(tree **)",
    "read(src/**)",
    "read(tests/**)",
    "read(docs/**)",
    "read(bench/**)",
    "read(scripts/**)",
    "read(**/*.md)",
    "read(**/*.rst)",
    "read(*.toml)",
    "read(*.json)",
    "read(*.yaml)",
    "read(.github/**)",
    "read(Makefile)",
    "read(Dockerfile)",
    "read(README*)",
    "write(src/**)",
    "write(tests/**)",
    "write(docs/**/*.md)",
    "write(/tmp/**)",
    "edit(**/*.py)",
    "edit(**/*.pyi)",
    "edit(src/**/*.rs)",
    "edit(src/**/*.ts)",
    "edit(src/**/*.tsx)",
    "edit(tests/**)",
    "edit(docs/**)",
    "edit(**/*.md)",
    "ls",
    "grep(**)",
    "glob(**)",
    "bm25(**)",
    "mcp__github",
    "mcp__jira",
    "mcp__linear__list_*",
    "mcp__linear__get_*",
    "mcp__sentry__get_*",
    "mcp__filesystem__read_file",
    'mcp__postgres__query(**"sql":"SELECT **)',
    'webfetch(**"url":"https://docs.rs/**)',
    'webfetch(**"url":"https://docs.python.org/**)',
    'webfetch(**"url":"https://developer.mozilla.org/**)',
    'webfetch(**"url":"https://github.com/**)',
    "todowrite",
    'task(**"subagent_type":"explore"**)',
]

_ASK_CORE = [
    "bash(git push**)",
    "bash(git rebase**)",
    "bash(git merge**)",
    "bash(git reset**)",
    "bash(git cherry-pick**)",
    "bash(npm install**)",
    "bash(npm i **)",
    "bash(pnpm add **)",
    "bash(yarn add **)",
    "bash(pip install**)",
    "bash(uv pip install**)",
    "bash(cargo add **)",
    "bash(cargo install **)",
    "bash(go get **)",
    "bash(docker **)",
    "bash(docker-compose **)",
    "bash(kubectl **)",
    "bash(helm **)",
    "bash(terraform **)",
    "bash(curl **)",
    "bash(wget **)",
    "bash(ssh **)",
    "bash(scp **)",
    "bash(rsync **)",
    "bash(rm **)",
    "bash(mv **)",
    "bash(chmod **)",
    "bash(chown **)",
    "bash(kill **)",
    "bash(python **)",
    "bash(node **)",
    "write(**)",
    "edit(**)",
    "read(/**)",
    "mcp__*",
    "mcp__github__merge_pull_request",
    "mcp__slack__*",
    "webfetch",
    "task",
    "notebookedit(**)",
]

# Per-project rules a real policy grows over time: one block per package of a
# monorepo, one per MCP server with admin tools.
_PACKAGES = [
    "auth",
    "billing",
    "gateway",
    "search",
    "notifications",
    "ui",
    "core",
    "cli",
    "sdk",
    "worker",
    "scheduler",
    "analytics",
]
_NPM_SCRIPTS = ["build", "lint", "test:unit", "test:e2e", "dev", "typecheck", "format"]
_MAKE_TARGETS = ["docs", "bench", "release-dry-run", "proto", "migrate-dev"]
_MCP_SERVERS = ["github", "jira", "linear", "slack", "sentry", "postgres", "figma", "notion"]


def policy_rules() -> dict[str, list[str]]:
    """The 200 rules as ``{"deny": [...], "allow": [...], "ask": [...]}``."""
    deny = list(_DENY_CORE)
    allow = list(_ALLOW_CORE)
    ask = list(_ASK_CORE)
    for pkg in _PACKAGES[:3]:
        allow.append(f"read(packages/{pkg}/**)")
        allow.append(f"edit(packages/{pkg}/src/**/*.ts)")
        ask.append(f"write(packages/{pkg}/migrations/**)")
        deny.append(f"edit(packages/{pkg}/dist/**)")
    for server in _MCP_SERVERS[:2]:
        deny.append(f"mcp__{server}__admin_*")
    rules = {"deny": deny, "allow": allow, "ask": ask}
    assert sum(len(v) for v in rules.values()) == 200
    return rules


# --------------------------------------------------------------------------
# The calls
# --------------------------------------------------------------------------

_DIRS = [
    "src",
    "tests",
    "docs",
    "lib",
    "scripts",
    "bench",
    "config",
    "internal",
    "pkg",
    "cmd",
    "api",
    "models",
    "utils",
    "handlers",
    "components",
    "hooks",
    "migrations",
    "fixtures",
    "node_modules",
    "vendor",
    ".github",
    "workflows",
    "build",
    "dist",
    "target",
    "debug",
    "assets",
    "static",
    "templates",
    "e2e",
    "integration",
    "unit",
]
_STEMS = [
    "main",
    "index",
    "app",
    "server",
    "client",
    "config",
    "settings",
    "utils",
    "helpers",
    "models",
    "routes",
    "views",
    "schema",
    "test_api",
    "test_models",
    "conftest",
    "README",
    "CHANGELOG",
    "Makefile",
    "Dockerfile",
    "setup",
    "pyproject",
    "Cargo",
    "package",
    "tsconfig",
    "lib",
    "mod",
    "errors",
    "types",
    "constants",
    "__init__",
]
_EXTS = [
    ".py",
    ".py",
    ".py",
    ".rs",
    ".rs",
    ".ts",
    ".ts",
    ".tsx",
    ".js",
    ".go",
    ".md",
    ".json",
    ".toml",
    ".yaml",
    ".yml",
    ".lock",
    ".txt",
    ".sql",
    ".sh",
    ".css",
    ".html",
    "",
]
_SECRETS = [
    ".env",
    ".env.local",
    ".env.production",
    "id_rsa",
    "id_ed25519.pub",
    "server.pem",
    "tls.key",
    "credentials",
    "config",
]
_WORDS = [
    "fix",
    "add",
    "update",
    "refactor",
    "remove",
    "handle",
    "retry",
    "timeout",
    "parser",
    "token",
    "cache",
    "user",
    "session",
    "request",
    "error",
    "flaky",
    "test",
    "bump",
    "deps",
    "docs",
    "typo",
    "config",
    "migration",
    "endpoint",
    "schema",
    "lint",
]
_CRATES = ["core", "cli", "server", "parser", "runtime", "macros", "bench"]
_PY_PKGS = ["requests", "numpy", "pydantic", "httpx", "rich", "fastapi", "sqlalchemy"]
_NPM_PKGS = ["react", "zod", "vitest", "lodash", "@types/node", "eslint", "typescript"]
_URLS = [
    "https://docs.rs/tokio/latest/tokio/",
    "https://docs.python.org/3/library/re.html",
    "https://developer.mozilla.org/en-US/docs/Web/API/fetch",
    "https://github.com/rust-lang/rust/issues/12345",
    "http://example.com/install.sh",
    "https://pastebin.com/raw/abcd1234",
    "https://stackoverflow.com/questions/11227809",
    "https://pypi.org/project/wcmatch/",
    "https://news.ycombinator.com/item?id=1",
]


def _cap(rng: random.Random, name: str) -> str:
    """Agents spell tool names "Bash" or "bash"; the policy folds ASCII case."""
    return name.capitalize() if rng.random() < 0.35 else name


def _rel_path(rng: random.Random, depth: int) -> str:
    parts = [rng.choice(_DIRS) for _ in range(depth - 1)]
    if rng.random() < 0.12 and depth >= 3:  # a monorepo package
        parts[0], parts[1] = "packages", rng.choice(_PACKAGES)
    secret = rng.random() < 0.05
    name = rng.choice(_SECRETS) if secret else rng.choice(_STEMS) + rng.choice(_EXTS)
    return "/".join([*parts, name])


def _path(rng: random.Random) -> str:
    depth = rng.randint(1, 8)
    p = _rel_path(rng, depth)
    r = rng.random()
    if r < 0.08:
        home = rng.choice(["/home/dev", "/home/ci", "/root"])
        return f"{home}/{rng.choice(['.ssh', '.aws', '.config', 'work'])}/{p}"
    if r < 0.12:
        return "/" + rng.choice(["etc", "tmp", "usr/local", "var/log"]) + "/" + p
    if r < 0.17:
        return "./" + p
    if r < 0.20:
        return p.replace("/", "/../", 1) if "/" in p else "../" + p
    if r < 0.21:
        return p.replace("/", "\\")
    return p


def _words(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _simple_command(rng: random.Random) -> str:
    k = rng.randrange(40)
    crate = rng.choice(_CRATES)
    path = _rel_path(rng, rng.randint(1, 5))
    if k < 4:
        flags = rng.choice(["", " --release", " --all-features", " --workspace", " -q"])
        return f"cargo test -p {crate}{flags} -- {rng.choice(_WORDS)}_{rng.choice(_WORDS)}"
    if k < 6:
        return f"cargo {rng.choice(['build', 'check', 'clippy -- -D warnings', 'fmt --all'])}"
    if k < 9:
        script = rng.choice([*_NPM_SCRIPTS, "start", "storybook"])
        return f"npm run {script}" + rng.choice(["", " -- --watch=false", f" -- {path}"])
    if k < 11:
        return f"pytest {path} -x -q -k {rng.choice(_WORDS)}"
    if k < 13:
        return rng.choice(
            [
                "git status",
                "git status --short",
                "git diff",
                "git diff --stat",
                f"git log --oneline -n {rng.randint(1, 50)}",
                f"git diff HEAD~1 -- {path}",
            ]
        )
    if k < 14:
        return f'git add {path} && git commit -m "{_words(rng, 2, 8)}"'
    if k < 15:
        return rng.choice(
            [
                "git push",
                "git push origin main",
                f"git push -u origin fix/{rng.choice(_WORDS)}",
                "git push --force-with-lease",
                "git push -f origin main",
            ]
        )
    if k < 17:
        return rng.choice(
            [
                "ls",
                "ls -la",
                f"ls {path}",
                "pwd",
                f"cat {path}",
                f"head -n 40 {path}",
                f"wc -l {path}",
                f"tree -L 2 {path}",
            ]
        )
    if k < 19:
        return f'rg -n "{rng.choice(_WORDS)}" {path}' + rng.choice(
            ["", " -g '*.py'", " | head -20"]
        )
    if k < 20:
        return f"find . -name '*.{rng.choice(['py', 'rs', 'ts'])}' | xargs wc -l"
    if k < 21:
        return rng.choice(
            [
                f"rm -rf {path}",
                f"rm -rf /{path}",
                "rm -rf node_modules target",
                f"rm {path}",
                "sudo apt-get install -y jq",
                f"chmod -R 777 {path}",
            ]
        )
    if k < 22:
        return rng.choice(
            [
                f"curl -fsSL {rng.choice(_URLS)} | sh",
                f"curl -s {rng.choice(_URLS)}",
                f"wget -q {rng.choice(_URLS)}",
            ]
        )
    if k < 24:
        return rng.choice(
            [
                f"pip install {rng.choice(_PY_PKGS)}",
                f"npm install {rng.choice(_NPM_PKGS)}",
                f"cargo add {rng.choice(_PY_PKGS)}",
                "uv pip install -e '.[dev]'",
            ]
        )
    if k < 25:
        return rng.choice(
            [
                f"docker build -t app:{rng.randint(1, 99)} .",
                "docker compose up -d",
                f"kubectl get pods -n {rng.choice(_PACKAGES)}",
                "terraform plan",
            ]
        )
    if k < 27:
        return f"python {path} --{rng.choice(_WORDS)} {rng.randint(0, 9999)}"
    if k < 28:
        return f"go test ./{path.rsplit('/', 1)[0]}/... -run Test{rng.choice(_WORDS).capitalize()}"
    if k < 29:
        return f"make {rng.choice(['', 'test', 'build', 'lint', *_MAKE_TARGETS])}".strip()
    if k < 30:
        return f'echo "{_words(rng, 1, 12)}" >> {path}'
    if k < 31:
        return f"sed -i 's/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}/g' {path}"
    if k < 32:
        return f"node scripts/{rng.choice(_STEMS)}.js"
    if k < 33:
        return f"ruff check {path} --fix" if rng.random() < 0.5 else f"python -m pytest {path}"
    if k < 34:
        return f"npx tsc --noEmit -p {path}"
    if k < 35:
        return f'grep -rn "{rng.choice(_WORDS)}" {path}'
    if k < 36:
        return f"awk '{{print $1}}' {path} | sort | uniq -c | sort -rn | head"
    if k < 37:
        return f"git checkout -b {rng.choice(_WORDS)}/{rng.choice(_WORDS)}-{rng.randint(1, 999)}"
    if k < 38:
        return f"ssh deploy@{rng.choice(_PACKAGES)}.internal 'systemctl status app'"
    if k < 39:
        return f"cat {path} | bash"
    return f"./scripts/{rng.choice(_STEMS)}.sh {path}"


def _bash_command(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.72:
        return _simple_command(rng)
    if r < 0.97:  # chains: cd into a package, then 2-8 commands joined by && or |
        n = rng.randint(2, 8)
        cmds = [_simple_command(rng) for _ in range(n)]
        joined = cmds[0]
        for c in cmds[1:]:
            joined += rng.choice([" && ", " && ", " | ", "; "]) + c
        if rng.random() < 0.5:
            joined = f"cd {_rel_path(rng, rng.randint(1, 4)).rsplit('/', 1)[0]} && {joined}"
        return joined
    # a long script: python/bash heredoc, 0.5-4 KiB
    lines: list[str] = []
    size = rng.randint(500, 4096)
    while sum(len(x) + 1 for x in lines) < size:
        w1, w2, k = rng.choice(_WORDS), rng.choice(_WORDS), rng.randint(0, 999)
        lines.append(
            rng.choice(
                [
                    f"    {w1} = load('{_rel_path(rng, rng.randint(1, 6))}')",
                    f"    for {w1} in range({k}):",
                    f"        print({w1}, {w2}.get())",
                    f"# {_words(rng, 3, 12)}",
                    f"    assert {w1} > {k}, {_words(rng, 1, 4)!r}",
                ]
            )
        )
    return "python3 - <<'EOF'\nimport sys, json\ndef main():\n" + "\n".join(lines) + "\nmain()\nEOF"


def _file_call(rng: random.Random) -> tuple[str, dict[str, Any]]:
    r = rng.random()
    if r < 0.45:
        if rng.random() < 0.06:
            files = [{"path": _path(rng)} for _ in range(rng.randint(2, 5))]
            return _cap(rng, "read"), {"files": files}
        args: dict[str, Any] = {"file_path": _path(rng)}
        if rng.random() < 0.3:
            args["offset"] = rng.randint(1, 2000)
            args["limit"] = rng.choice([100, 200, 2000])
        return _cap(rng, "read"), args
    if r < 0.60:
        body = "\n".join(_words(rng, 3, 12) for _ in range(rng.randint(1, 30)))
        return _cap(rng, "write"), {"file_path": _path(rng), "content": body}
    if r < 0.92:
        return _cap(rng, "edit"), {
            "file_path": _path(rng),
            "old_string": _words(rng, 1, 10),
            "new_string": _words(rng, 1, 10),
            "replace_all": rng.random() < 0.1,
        }
    return _cap(rng, "ls"), {"path": _path(rng).rsplit("/", 1)[0] if rng.random() < 0.8 else "."}


def _search_call(rng: random.Random) -> tuple[str, dict[str, Any]]:
    mode = rng.choice(["grep", "grep", "glob", "bm25", "search"])
    if mode == "glob":
        query = f"**/*.{rng.choice(['py', 'rs', 'ts', 'md'])}"
    elif mode == "bm25":
        query = _words(rng, 2, 6)
    else:
        query = rng.choice(["TODO", "password", "def main", "fn new", "import re", "api_key"])
        query = rng.choice([query, f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}", "class \\w+Error"])
    path = rng.choice(
        [".", "src", _rel_path(rng, rng.randint(1, 4)).rsplit("/", 1)[0], "/home/dev/.ssh", "/etc"]
    )
    args: dict[str, Any] = {"query": query, "path": path}
    if mode == "search":
        args["mode"] = rng.choice(["grep", "glob", "bm25"])
    if rng.random() < 0.3:
        args["max_results"] = rng.choice([20, 50, 100])
    return _cap(rng, mode), args


def _mcp_call(rng: random.Random) -> tuple[str, dict[str, Any]]:
    server = rng.choice(_MCP_SERVERS)
    owner, repo = rng.choice(["acme", "octo", "a3s"]), rng.choice(_PACKAGES)
    if server == "github":
        tool = rng.choice(
            [
                "create_issue",
                "list_issues",
                "get_pull_request",
                "create_pull_request",
                "merge_pull_request",
                "delete_repository",
                "search_code",
                "admin_set_rules",
            ]
        )
        args: dict[str, Any] = {"owner": owner, "repo": repo}
        if tool in ("create_issue", "create_pull_request"):
            args["title"] = _words(rng, 3, 10).capitalize()
            args["body"] = "\n\n".join(_words(rng, 5, 25) for _ in range(rng.randint(1, 6)))
            args["labels"] = [rng.choice(_WORDS) for _ in range(rng.randint(0, 4))]
            if tool == "create_pull_request":
                args["head"], args["base"], args["draft"] = (
                    f"fix/{rng.choice(_WORDS)}",
                    "main",
                    True,
                )
        elif tool in ("get_pull_request", "merge_pull_request"):
            args["pull_number"] = rng.randint(1, 9999)
            args["merge_method"] = rng.choice(["squash", "merge", None])
        elif tool == "search_code":
            args = {"q": f"{rng.choice(_WORDS)} repo:{owner}/{repo}", "per_page": 30}
        else:
            args["state"] = rng.choice(["open", "closed"])
            args["page"] = rng.randint(1, 5)
    elif server == "postgres":
        tool = "query"
        table = rng.choice(["users", "orders", "events", "sessions"])
        sql = rng.choice(
            [
                f"SELECT * FROM {table} WHERE id = {rng.randint(1, 10**6)}",
                f"SELECT count(*) FROM {table} WHERE created_at > now() - interval '1 day'",
                f"DROP TABLE {table}",
                f"TRUNCATE {table}",
                f"UPDATE {table} SET flag = true WHERE id = {rng.randint(1, 99)}",
            ]
        )
        args = {"sql": sql, "params": [rng.randint(0, 9), 1.5, None], "timeout_ms": 5000}
    elif server == "slack":
        tool = rng.choice(["post_message", "list_channels", "get_thread"])
        args = {
            "channel": rng.choice(["#general", "#dev", "#alerts", "C0123ABCD"]),
            "text": _words(rng, 3, 20),
            "unfurl": False,
        }
    else:
        tool = rng.choice(
            [
                "list_issues",
                "get_issue",
                "create_issue",
                "search",
                "update_issue",
                "drop_index",
                "admin_reset",
                "get_event",
                "delete_issue",
            ]
        )
        args = {
            "project": rng.choice(["ENG", "OPS", "WEB"]),
            "id": rng.randint(1, 99999),
            "fields": {
                "summary": _words(rng, 2, 8),
                "priority": rng.choice(["P1", "P2", "P3"]),
                "estimate": rng.choice([0.5, 1, 2.25, 8]),
            },
        }
    name = f"mcp__{server}__{tool}"
    if rng.random() < 0.05:
        name = name.replace(server, server.capitalize(), 1)
    return name, args


def _other_call(rng: random.Random) -> tuple[str, dict[str, Any]]:
    r = rng.random()
    if r < 0.5:
        return _cap(rng, "webfetch"), {"url": rng.choice(_URLS), "prompt": _words(rng, 4, 15)}
    if r < 0.75:
        return _cap(rng, "task"), {
            "description": _words(rng, 2, 5),
            "prompt": " ".join(_words(rng, 5, 15) for _ in range(rng.randint(1, 8))),
            "subagent_type": rng.choice(["explore", "general-purpose", "review"]),
        }
    if r < 0.92:
        todos = [
            {"content": _words(rng, 2, 8), "status": rng.choice(["pending", "done"]), "id": str(i)}
            for i in range(rng.randint(1, 6))
        ]
        return _cap(rng, "todowrite"), {"todos": todos}
    return _cap(rng, "notebookedit"), {
        "notebook_path": _path(rng),
        "cell": rng.randint(0, 40),
        "new_source": _words(rng, 3, 30),
    }


def tool_calls(n: int = N_CALLS, seed: int = SEED) -> list[tuple[str, dict[str, Any]]]:
    """``n`` (tool, args) calls, the same list for the same ``seed``."""
    rng = random.Random(seed)
    calls: list[tuple[str, dict[str, Any]]] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.40:
            calls.append(
                (
                    _cap(rng, "bash"),
                    {
                        "command": _bash_command(rng),
                        **({"timeout": 120000} if rng.random() < 0.2 else {}),
                    },
                )
            )
        elif r < 0.72:
            calls.append(_file_call(rng))
        elif r < 0.82:
            calls.append(_search_call(rng))
        elif r < 0.95:
            calls.append(_mcp_call(rng))
        else:
            calls.append(_other_call(rng))
    return calls


# --------------------------------------------------------------------------
# The "mixed" workload: the other mix issue 21 names (bash lines of many shapes,
# file paths, git, download and network, MCP tools), decided by the same policy
# --------------------------------------------------------------------------

MIXED_SEED = 0x5EED21


def _bash_shape(rng: random.Random) -> str:
    """A bash line of one of the shapes an agent writes, beyond bench/policy's own mix."""
    cmd = _simple_command(rng)
    path = _rel_path(rng, rng.randint(1, 4))
    w = rng.choice(_WORDS)
    shapes = [
        lambda: cmd,
        lambda: f"( cd {path.rsplit('/', 1)[0]} && {cmd} )",
        lambda: f"FOO={w} BAR=1 {cmd}",
        lambda: f"timeout 60 {cmd}",
        lambda: f"env -i PATH=/usr/bin {cmd}",
        lambda: f'for f in {path} {path}.bak; do wc -l "$f"; done',
        lambda: f'echo "$(git rev-parse HEAD)" > {path}',
        lambda: f"git -C {path.rsplit('/', 1)[0]} status --short",
        lambda: f"bash -c '{cmd}'",
        lambda: f"{cmd} 2>&1 | tee /tmp/{w}.log",
        lambda: f"if [ -f {path} ]; then cat {path}; else echo missing; fi",
        lambda: f"rg -l {w} | xargs sed -i 's/{w}/{rng.choice(_WORDS)}/g'",
        lambda: f"{cmd} && {_simple_command(rng)} || echo failed",
        lambda: f"git log --format='%H %s' -n {rng.randint(1, 20)} | grep -i {w}",
        lambda: f"x=$(ls {path}); echo $x",
        lambda: f"ls   -la   {path}  ",
    ]
    return rng.choice(shapes)()


def mixed_calls(n: int = N_CALLS, seed: int = MIXED_SEED) -> list[tuple[str, dict[str, Any]]]:
    """``n`` calls of the mixed workload, the same list for the same ``seed``: 40% bash
    lines of many shapes, 30% read/write/edit paths, 10% git, 10% download and web
    fetches, 10% MCP tools."""
    rng = random.Random(seed)
    calls: list[tuple[str, dict[str, Any]]] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.40:
            calls.append((_cap(rng, "bash"), {"command": _bash_shape(rng)}))
        elif r < 0.70:
            calls.append(_file_call(rng))
        elif r < 0.80:
            command = rng.choice(["status", "diff", "log", "show"])
            args: dict[str, Any] = {"command": command}
            if command != "status" and rng.random() < 0.7:
                rev = rng.choice(["HEAD", "HEAD~2", "main", "origin/main..HEAD"])
                if command == "show" and rng.random() < 0.6:
                    rev = f"{rng.choice(['HEAD', 'HEAD~1'])}:{_path(rng).lstrip('/')}"
                args["target"] = rev
            calls.append((_cap(rng, "git"), args))
        elif r < 0.90:
            url = rng.choice(_URLS)
            if rng.random() < 0.5:
                calls.append((_cap(rng, "download"), {"url": url, "file_path": _rel_path(rng, 2)}))
            else:
                calls.append((_cap(rng, "webfetch"), {"url": url, "prompt": _words(rng, 3, 9)}))
        else:
            calls.append(_mcp_call(rng))
    return calls


def kind_of(tool: str) -> str:
    """The workload category of a call's tool, for per-kind breakdowns."""
    t = tool.lower()
    if t == "bash":
        return "bash"
    if t in ("read", "write", "edit", "ls"):
        return "file"
    if t in ("grep", "glob", "bm25", "search"):
        return "search"
    if t.startswith("mcp__"):
        return "mcp"
    if t == "git":
        return "git"
    if t in ("download", "webfetch"):
        return "network"
    return "json"


if __name__ == "__main__":  # a quick look at the workload
    import collections

    rules = policy_rules()
    print({k: len(v) for k, v in rules.items()}, "rules")
    calls = tool_calls()
    print(collections.Counter(kind_of(t) for t, _ in calls))
    for t, a in calls[:15]:
        print(t, a)
