"""Hosts as the approver reads them: the canonical A-label, and a warning for a look-alike."""

from __future__ import annotations

import pytest

from codeward._hostname import host_warnings
from codeward._summary import describe_call, grant_target
from codeward.guardrail import assess_risk


def test_the_target_is_the_canonical_form() -> None:
    assert grant_target("\u0435xample.com", 443) == "xn--xample-2of.com:443"
    assert grant_target("B\u00fccher.Example.", 80) == "xn--bcher-kva.example:80"
    assert grant_target("[::1]", 8080) == "[::1]:8080"
    assert grant_target("not a host", 80) == "not a host:80"  # refused later, shown escaped


@pytest.mark.parametrize(
    "host, warned",
    [
        ("example.com", None),
        ("b\u00fccher.de", None),  # Latin with a diacritic
        ("\u4f8b\u3048.jp", None),  # Han with Hiragana: one writing
        ("\u043f\u0440\u0438\u043c\u0435\u0440.ru", None),  # Cyrillic, not all look-alikes
        ("\u0435xample.com", "mixes scripts (Cyrillic, Latin)"),
        ("p\u0430ypal.com", "mixes scripts (Cyrillic, Latin)"),
        ("\u0430\u0440\u0440\u04cf\u0435.com", "look like the Latin 'apple'"),
        ("\u03bf\u03ba.com", "look like the Latin 'ok'"),  # Greek
        ("fe80::1%lo", None),  # no host at all: refused before any prompt
    ],
)
def test_warnings(host: str, warned: str | None) -> None:
    warnings = host_warnings(host)
    if warned is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warned in warnings[0]
        assert warnings[0].isascii()  # the look-alike is escaped, never shown as itself


def test_operation_and_risk_lines() -> None:
    args = {
        "command": "true",
        "sandbox_permissions": "request_network_grant",
        "network_grant": {"host": "\u0435xample.com"},
    }
    assert describe_call("bash", args).startswith("bash (network xn--xample-2of.com:443 and ")
    risk = assess_risk("bash", args, kind="bash", sandboxed=True, paths=[])
    assert any("network access to xn--xample-2of.com:443" in r for r in risk.reasons)
    assert any("mixes scripts" in r for r in risk.reasons)


def test_a_download_names_the_canonical_host() -> None:
    args = {"url": "https://\u0435xample.com/a?b=1", "file_path": "a.bin"}
    assert describe_call("download", args) == "download https://xn--xample-2of.com/a?b=1 -> a.bin"
    risk = assess_risk("download", args, kind="download", sandboxed=True, paths=[])
    assert any("from xn--xample-2of.com into" in r for r in risk.reasons)
    assert any("mixes scripts" in r for r in risk.reasons)
    plain = {"url": "https://Example.com:8443/x", "file_path": "x"}
    assert describe_call("download", plain) == "download https://Example.com:8443/x -> x"
