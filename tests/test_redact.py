"""One set of rules for showing model-written text: the guardrail's call summary, the
confirmation's operation and the download's URLs all mask and escape the same way."""

from __future__ import annotations

import pytest

from codeward import _redact
from codeward._redact import escape, is_sensitive_param, redact, redact_url, safe_text
from codeward.guardrail import redact as guardrail_redact
from codeward.guardrail import summarize_call
from codeward.hitl import summarize_operation


def test_the_public_names_are_the_one_implementation():
    assert guardrail_redact is _redact.redact
    args = {"command": "curl -H 'Authorization: Bearer abcdefghijklmnop' https://h/x?sig=S"}
    assert summarize_operation("bash", args, 240) == summarize_call("bash", args, limit=240)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("export GITHUB_TOKEN=ghp_aaaaaaaaaaaaaaaaaaaaaaaa", "ghp_aaaa"),
        ("aws --key AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
        ("curl -H 'Authorization: Bearer abcdefghijklmnop'", "abcdefghijklmnop"),
        ("git clone https://bob:hunter2@example.com/r", "hunter2"),
        ("mysql --password hunter2", "hunter2"),
        ("tool --api-key=KEYVALUE1", "KEYVALUE1"),
        ("PASSWORD=hunter2 make", "hunter2"),
        ('{"api_key": "plainvalue"}', "plainvalue"),
        ("x eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl y", "c2lnbmF0dXJl"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n", "b3BlbnNzaC1rZXk"),
        ("https://h/x?X-Amz-Signature=SIGVALUE&v=1", "SIGVALUE"),
        ("https://h/x?sv=2022&se=2026&sp=r&sig=SASVALUE", "SASVALUE"),
        ("https://h/x?hmac=HMACVALUE", "HMACVALUE"),
    ],
)
def test_credentials_are_masked_wherever_they_stand(text, secret):
    assert secret not in redact(text)
    for shown in (
        summarize_call("bash", {"command": text}, limit=1000),
        summarize_call("some_tool", {"note": text}, limit=1000),
    ):
        assert secret not in shown and "REDACTED" in shown, shown


def test_ordinary_text_is_left_alone():
    for text in (
        "git commit -m 'fix token refresh' && make test",
        "https://h/x?version=2&arch=x86_64&page=3",
        "cargo build --release",
    ):
        assert redact(text) == text


def test_nested_arguments_named_like_secrets_are_masked():
    args = {"headers": {"Cookie": "session=abc123", "Accept": "*/*"}, "auth": {"user": "u"}}
    shown = summarize_call("http_get", args, limit=1000)
    assert "abc123" not in shown and "*/*" in shown
    assert "auth=REDACTED" in shown


def test_deep_or_cyclic_arguments_never_raise():
    deep: list[object] = []
    node = deep
    for _ in range(10_000):
        node.append([])
        node = node[0]  # type: ignore[assignment]
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    assert summarize_call("t", {"deep": deep}) == 't: deep=[[[[[[[["..."]]]]]]]]'
    assert summarize_call("t", {"cyclic": cyclic}).startswith('t: cyclic={"self": {"self":')


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("a\r\n\tb", "a\\r\\n\\tb"),
        ("y\u202eexe.txt", "y\\u202eexe.txt"),
        ("a\u200bb", "a\\u200bb"),
        ("rm\u00a0-rf", "rm\\xa0-rf"),  # a space that is not one
        ("a\U000e0041b", "a\\U000e0041b"),  # an invisible tag character
        ("héllo ✓ 日本", "héllo ✓ 日本"),
    ],
)
def test_escape(text, shown):
    assert escape(text) == shown


def test_safe_text_bounds_the_work_and_shows_the_length():
    shown = safe_text("a" * 5_000_000, 60)
    assert len(shown) == 60 and shown.endswith("… (5000000 chars)")
    assert safe_text("x\ny", 60, one_line=True) == "x ⏎ y"
    assert safe_text("x" * 100, 10, show_length=False) == "x" * 9 + "…"


def test_redact_url_drops_user_information_and_fragments():
    shown = redact_url("https://ghp_tokenasuser@h.example/x?token=T0K&v=1#frag\x1b")
    assert "ghp_tokenasuser" not in shown and "T0K" not in shown and "frag" not in shown
    assert shown == "https://REDACTED@h.example/x?token=REDACTED&v=1"
    assert len(redact_url("https://h/" + "p" * 10_000)) == 300


@pytest.mark.parametrize("name", ["sv", "se", "sp", "hmac", "session_id", "X-Goog-Credential"])
def test_sensitive_parameters(name):
    assert is_sensitive_param(name)
