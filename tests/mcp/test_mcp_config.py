"""Loading ``.mcp.json``: the standard shape, codeward's sandbox key, ${VAR} expansion, refusals."""

from __future__ import annotations

import json

import pytest

from codeward.mcp import McpConfigError, McpSandbox, McpServerConfig, load_mcp_config


def _write(tmp_path, data) -> str:  # type: ignore[no-untyped-def]
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


def test_the_standard_shape(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = _write(
        tmp_path,
        {
            "mcpServers": {
                "files": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                    "env": {"TOKEN": "${MY_TOKEN}", "MODE": "${MODE:-fast}"},
                },
                "local": {"type": "stdio", "command": "./bin/server", "cwd": "sub"},
                "boxed": {"command": "srv", "sandbox": {"network": True}},
                "remote": {"type": "http", "url": "https://example.invalid/mcp"},
            }
        },
    )
    config = load_mcp_config(path, environ={"MY_TOKEN": "t0k"})
    files, local, boxed = config.servers
    assert files.args == ("-y", "@modelcontextprotocol/server-filesystem", ".")
    assert files.env == {"TOKEN": "t0k", "MODE": "fast"}
    assert files.sandbox is None
    assert local.command == str(tmp_path / "bin" / "server")
    assert local.cwd == str(tmp_path / "sub")
    assert boxed.sandbox == McpSandbox(network=True)
    assert config.skipped == (("remote", "transport 'http' is not supported (stdio only)"),)
    assert config.path == path


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"command": "x", "autoApprove": []}, "unknown key"),
        ({"command": 3}, "command must be a string"),
        ({"command": "x", "args": "a b"}, "args must be a list"),
        ({"command": "x", "env": {"A": 1}}, "must be a string"),
        ({"command": "x", "env": {"A": "${UNSET_VAR_X}"}}, "not set"),
        ({"command": "x", "sandbox": {"net": True}}, "sandbox takes"),
        ({"command": "x", "sandbox": "yes"}, "sandbox must be"),
        ("nope", "must be an object"),
    ],
)
def test_malformed_entries_are_refused(tmp_path, entry, message) -> None:  # type: ignore[no-untyped-def]
    path = _write(tmp_path, {"mcpServers": {"s": entry}})
    with pytest.raises(McpConfigError, match=message) as caught:
        load_mcp_config(path, environ={})
    assert caught.value.path == path


@pytest.mark.parametrize("name", ["", "a__b", "with space", "ünïcode", "x" * 65, "-lead"])
def test_server_names_must_be_plain(name) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(McpConfigError, match="invalid MCP server name"):
        McpServerConfig(name, "cmd")


def test_files_that_are_not_configurations(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(McpConfigError, match="not valid JSON"):
        load_mcp_config(_write(tmp_path, "{nope"))
    with pytest.raises(McpConfigError, match="mcpServers"):
        load_mcp_config(_write(tmp_path, {"servers": {}}))
    with pytest.raises(McpConfigError, match="cannot read"):
        load_mcp_config(tmp_path / "missing.json")


def test_a_mapping_works_too() -> None:
    config = load_mcp_config({"mcpServers": {"a": {"command": "/bin/true"}}})
    assert config.servers[0].command == "/bin/true" and config.path is None


def test_option_values_are_checked() -> None:
    with pytest.raises(McpConfigError, match="request_timeout_ms"):
        McpServerConfig("a", "x", request_timeout_ms=0)
    with pytest.raises(McpConfigError, match="cwd must be an absolute"):
        McpServerConfig("a", "x", cwd="rel")
    with pytest.raises(McpConfigError, match="invalid environment variable name"):
        McpServerConfig("a", "x", env={"A=B": "c"})
