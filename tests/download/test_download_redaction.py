"""Signed query parameters are sent as they are and shown nowhere else."""

from __future__ import annotations

import pytest
from dlserver import redirect, respond, send_head, serve_file

from codeward._redact import is_sensitive_param, redact_query, redact_url
from codeward.download import DownloadError
from codeward.tools import ToolContext
from codeward.tools._download import DownloadTool

SECRETS = ("SIGSIGSIG", "CREDCRED", "TOKTOK", "KEYKEY", "EXPEXP", "SESSSESS", "PWPWPW")
SIGNED = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=CREDCRED&X-Amz-Signature=SIGSIGSIG"
    "&X-Amz-Security-Token=SESSSESS&token=TOKTOK&key=KEYKEY&Expires=EXPEXP&password=PWPWPW&v=7"
)
DATA = b"artifact" * 1000


def _clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, secret


@pytest.mark.parametrize(
    "name",
    [
        "X-Amz-Signature",
        "x-amz-credential",
        "X-Amz-Security-Token",
        "X-Goog-Signature",
        "sig",
        "Signature",
        "token",
        "access_token",
        "api_key",
        "apiKey",
        "key",
        "Key-Pair-Id",
        "Policy",
        "Expires",
        "se%73sion",
        "client_secret",
        "auth",
    ],
)
def test_sensitive_names(name):
    assert is_sensitive_param(name)


@pytest.mark.parametrize(
    "name", ["v", "version", "response-content-type", "page", "X-Amz-Algorithm"]
)
def test_ordinary_names(name):
    assert not is_sensitive_param(name)


def test_redact_query_and_text():
    assert redact_query("a=1&sig=x&b&token=") == "a=1&sig=REDACTED&b&token=REDACTED"
    assert redact_query("0123456789abcdef0123") == "REDACTED"  # a bare signature
    raw = "https://u:p@h.example.com/x?sig=abc#frag\n"
    shown = redact_url(raw)
    assert "abc" not in shown and "u:p" not in shown and "frag" not in shown


def test_sent_as_given_but_redacted_in_the_result(fetch, origin):
    origin["/a"] = redirect(f"/b?{SIGNED}&hop=2")
    origin["/b"] = serve_file(DATA)
    result = fetch(f"http://dl.example.com/a?{SIGNED}")
    assert origin.requests[0].query == SIGNED  # the server gets the real signature
    assert origin.requests[1].query == f"{SIGNED}&hop=2"
    _clean(repr(result))
    _clean(str(result.to_dict()))
    assert "X-Amz-Signature=REDACTED" in result.url and "v=7" in result.url


def _errors():
    def too_big(req, conn):
        send_head(conn, 200, [("Content-Length", str(10**9))])

    def loop(req, conn):
        respond(conn, 302, [("Location", f"/loop?{SIGNED}")])

    return {
        "status": lambda req, conn: respond(conn, 403, body=b"denied"),
        "too-big": too_big,
        "loop": loop,
        "private-redirect": redirect(f"http://127.0.0.1/x?{SIGNED}"),
        "scheme-redirect": redirect(f"ftp://dl.example.com/x?{SIGNED}"),
        "bad-redirect": redirect(f"http://user:PWPWPW@dl.example.com/?{SIGNED}"),
    }


@pytest.mark.parametrize("case", list(_errors()))
def test_errors_never_show_secrets(fetch, origin, case):
    origin["/loop"] = _errors()[case]
    with pytest.raises(DownloadError) as info:
        fetch(f"http://dl.example.com/loop?{SIGNED}", max_bytes=1000)
    _clean(str(info.value))
    _clean(repr(info.value))
    _clean(str(vars(info.value)))


def test_url_rejection_never_shows_secrets(fetch):
    with pytest.raises(DownloadError) as info:
        fetch(f"http://user:PWPWPW@dl.example.com/?{SIGNED}")
    _clean(str(info.value))


def test_tool_output_and_metadata_never_show_secrets(origin, net, ws):
    tool = DownloadTool(resolver=net.resolver, dialer=net.dialer)
    ctx = ToolContext(workspace=ws, sandbox=None)  # type: ignore[arg-type]
    origin["/ok"] = serve_file(DATA)
    origin["/bad"] = lambda req, conn: respond(conn, 404)
    ok = tool.run({"url": f"http://dl.example.com/ok?{SIGNED}", "file_path": "a"}, ctx)
    bad = tool.run({"url": f"http://dl.example.com/bad?{SIGNED}", "file_path": "b"}, ctx)
    assert ok.success and not bad.success
    for result in (ok, bad):
        _clean(str(result.to_dict()))
