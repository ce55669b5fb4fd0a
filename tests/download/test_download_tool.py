"""The model-facing tool: schema, paths, results, error kinds, the mutation record."""

from __future__ import annotations

import hashlib
import os
import ssl
import threading

import pytest
from dlserver import respond, serve_file

from codeward.download import (
    AddressRejected,
    Cancelled,
    DestinationRejected,
    DownloadTimeout,
    HttpStatusError,
    IntegrityError,
    NetworkError,
    ProtocolError,
    RangeError,
    RedirectRejected,
    TooLarge,
    UrlRejected,
    WriteError,
)
from codeward.tools import ArgumentError, ErrorKind, ToolContext, ToolKind, validate
from codeward.tools._download import DownloadTool, default_file_name, error_kind

DATA = b"tool" * 5000


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def record(self, tool: str, path: str, content_digest: str) -> None:
        self.calls.append((tool, path, content_digest))


@pytest.fixture
def tool(net):
    return DownloadTool(resolver=net.resolver, dialer=net.dialer)


@pytest.fixture
def ctx(ws):
    return ToolContext(workspace=ws, sandbox=None, recorder=Recorder())  # type: ignore[arg-type]


def test_identity_and_schema():
    tool = DownloadTool()
    assert (tool.name, tool.kind) == ("download", ToolKind.DOWNLOAD)
    schema = tool.model_schema()["parameters"]
    assert schema["additionalProperties"] is False and schema["required"] == ["url"]
    assert set(schema["properties"]) == {
        "url",
        "file_path",
        "overwrite",
        "max_bytes",
        "timeout",
        "expected_sha256",
        "connections",
    }
    props = schema["properties"]
    assert (props["max_bytes"]["minimum"], props["max_bytes"]["maximum"]) == (1, 8 << 30)
    assert props["max_bytes"]["default"] == 512 << 20
    assert (props["timeout"]["minimum"], props["timeout"]["maximum"]) == (1, 3600)
    assert (props["connections"]["minimum"], props["connections"]["maximum"]) == (1, 4)
    text = str(schema)
    for host_only in ("headers", "proxy", "ssl", "resolver", "dialer"):
        assert host_only not in text


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"url": ""},
        {"url": "http://x.example.com/", "headers": {"A": "b"}},
        {"url": "http://x.example.com/", "proxy": "http://p:1"},
        {"url": "http://x.example.com/", "max_bytes": 0},
        {"url": "http://x.example.com/", "max_bytes": 8 * 2**30 + 1},
        {"url": "http://x.example.com/", "timeout": 0},
        {"url": "http://x.example.com/", "timeout": 3601},
        {"url": "http://x.example.com/", "expected_sha256": "z" * 64},
        {"url": "http://x.example.com/", "expected_sha256": "a" * 65},
        {"url": "http://x.example.com/", "connections": 5},
        {"url": "http://x.example.com/", "connections": 0},
        {"url": "http://x.example.com/", "overwrite": "yes"},
    ],
)
def test_schema_refuses(args):
    with pytest.raises(ArgumentError):
        validate(DownloadTool.schema, args)


def test_schema_accepts_a_full_call():
    validate(
        DownloadTool.schema,
        {
            "url": "https://x.example.com/a.tgz",
            "file_path": "a.tgz",
            "overwrite": True,
            "max_bytes": 8 << 30,
            "timeout": 3600,
            "expected_sha256": "A" * 64,
            "connections": 4,
        },
    )


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://h.example.com/a/b/tool-1.2.tar.gz?sig=x#f", "tool-1.2.tar.gz"),
        ("https://h.example.com/", "download"),
        ("https://h.example.com", "download"),
        ("https://h.example.com/dir/", "download"),
        ("https://h.example.com/.env", "env"),
        ("https://h.example.com/..", "download"),
        ("https://h.example.com/%2e%2e", "download"),
        ("https://h.example.com/a%2F..%2F..%2Fetc%2Fpasswd", "a_.._.._etc_passwd"),
        ("https://h.example.com/-rf", "rf"),
        ("https://h.example.com/caf%C3%A9.txt", "caf_.txt"),
        ("https://h.example.com/" + "x" * 300 + ".tar.gz", "x" * 117 + ".gz"),
        ("not a url", "download"),
    ],
)
def test_default_file_name(url, name):
    assert default_file_name(url) == name
    assert "/" not in name and not name.startswith(".")


def test_paths(tool):
    assert tool.paths({"url": "https://h.example.com/f.zip", "file_path": "x/y"}) == ["x/y"]
    assert tool.paths({"url": "https://h.example.com/f.zip"}) == ["f.zip"]
    assert tool.paths({}) == []


def test_run_success_records_the_mutation(tool, ctx, origin, ws):
    origin["/pkg/f.zip"] = serve_file(DATA)
    digest = hashlib.sha256(DATA).hexdigest()
    result = tool.run({"url": "http://dl.example.com/pkg/f.zip", "expected_sha256": digest}, ctx)
    assert result.success and result.error_kind is None
    assert result.metadata["file_path"] == "f.zip" and result.metadata["bytes"] == len(DATA)
    assert result.metadata["sha256"] == digest and digest in result.output
    assert ctx.recorder.calls == [("download", "f.zip", digest)]
    with open(os.path.join(ws.root, "f.zip"), "rb") as f:
        assert f.read() == DATA


def test_run_refusals(tool, ctx, origin):
    origin["/f"] = serve_file(DATA)
    cases = [
        ({"url": "http://127.0.0.1/"}, ErrorKind.PERMISSION_DENIED),
        ({"url": "ftp://x.example.com/"}, ErrorKind.INVALID_ARGUMENT),
        ({"url": "http://dl.example.com/f", "file_path": "../x"}, ErrorKind.PERMISSION_DENIED),
        ({"url": "http://dl.example.com/f", "file_path": ".env"}, ErrorKind.CREDENTIAL_BOUNDARY),
        ({"url": "http://dl.example.com/f", "max_bytes": 10}, ErrorKind.TOO_LARGE),
        ({"url": "http://dl.example.com/f", "expected_sha256": "0" * 64}, ErrorKind.CONFLICT),
        ({"url": "http://dl.example.com/missing"}, ErrorKind.NOT_FOUND),
    ]
    for args, kind in cases:
        result = tool.run({"file_path": "out", **args}, ctx)
        assert (result.success, result.error_kind) == (False, kind), args
        assert result.metadata["error"] and result.output
    assert ctx.recorder.calls == []


def test_run_existing_file_is_a_conflict(tool, ctx, origin, ws):
    origin["/f"] = serve_file(DATA)
    with open(os.path.join(ws.root, "f"), "w") as f:
        f.write("mine")
    result = tool.run({"url": "http://dl.example.com/f"}, ctx)
    assert result.error_kind is ErrorKind.CONFLICT
    assert tool.run({"url": "http://dl.example.com/f", "overwrite": True}, ctx).success


def test_run_cancelled(tool, ws, origin):
    cancel = threading.Event()
    cancel.set()
    ctx = ToolContext(workspace=ws, sandbox=None, cancel=cancel)  # type: ignore[arg-type]
    origin["/f"] = serve_file(DATA)
    assert tool.run({"url": "http://dl.example.com/f"}, ctx).error_kind is ErrorKind.CANCELLED


def test_host_settings_are_checked_at_construction():
    lax = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    lax.check_hostname = False
    lax.verify_mode = ssl.CERT_NONE
    with pytest.raises(ValueError):
        DownloadTool(ssl_context=lax)
    with pytest.raises(UrlRejected):
        DownloadTool(proxy="socks5://p:1080")


def test_host_headers_reach_the_server(net, ctx, origin):
    tool = DownloadTool(
        headers={"Authorization": "Bearer t"}, resolver=net.resolver, dialer=net.dialer
    )
    origin["/f"] = serve_file(DATA)
    assert tool.run({"url": "http://dl.example.com/f"}, ctx).success
    assert origin.requests[0].header("Authorization") == "Bearer t"


def test_error_kind_mapping_is_total():
    cases = [
        (UrlRejected("x"), ErrorKind.INVALID_ARGUMENT),
        (AddressRejected("x", host="h", address="a", reason="r"), ErrorKind.PERMISSION_DENIED),
        (RedirectRejected("x", reason="scheme"), ErrorKind.PERMISSION_DENIED),
        (RedirectRejected("x", reason="loop"), ErrorKind.NETWORK),
        (TooLarge("x", limit=1), ErrorKind.TOO_LARGE),
        (DownloadTimeout("x", timeout_s=1), ErrorKind.TIMEOUT),
        (IntegrityError("x", reason="sha256"), ErrorKind.CONFLICT),
        (IntegrityError("x", reason="truncated"), ErrorKind.NETWORK),
        (DestinationRejected("x", path="p", reason="credential"), ErrorKind.CREDENTIAL_BOUNDARY),
        (DestinationRejected("x", path="p", reason="exists"), ErrorKind.CONFLICT),
        (DestinationRejected("x", path="p", reason="symlink"), ErrorKind.PERMISSION_DENIED),
        (DestinationRejected("x", path="p", reason="invalid"), ErrorKind.INVALID_ARGUMENT),
        (RangeError("x"), ErrorKind.NETWORK),
        (HttpStatusError("x", status=404), ErrorKind.NOT_FOUND),
        (HttpStatusError("x", status=403), ErrorKind.PERMISSION_DENIED),
        (HttpStatusError("x", status=500), ErrorKind.NETWORK),
        (Cancelled("x"), ErrorKind.CANCELLED),
        (NetworkError("x"), ErrorKind.NETWORK),
        (ProtocolError("x"), ErrorKind.NETWORK),
        (WriteError("x"), ErrorKind.IO_ERROR),
    ]
    for exc, kind in cases:
        assert error_kind(exc) is kind, exc


def test_status_message_reaches_the_model(tool, ctx, origin):
    origin["/f"] = lambda req, conn: respond(conn, 503)
    result = tool.run({"url": "http://dl.example.com/f"}, ctx)
    assert "503" in result.output and result.error_kind is ErrorKind.NETWORK
