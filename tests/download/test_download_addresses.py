"""The address table, row by row at both ends, and the IPv4-in-IPv6 forms refused outright."""

from __future__ import annotations

import ipaddress

import pytest

from codeward.download import IPV4_TABLE, IPV6_TABLE, AddressRejected
from codeward.download._addresses import GLOBAL_UNICAST, check_address, refusal

ROWS = [*IPV4_TABLE, *IPV6_TABLE]


def _covered(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether the table (or, for IPv6, being outside 2000::/3) should refuse ``address``."""
    if isinstance(address, ipaddress.IPv6Address) and address not in GLOBAL_UNICAST:
        return True
    return any(address in row.network for row in ROWS if row.network.version == address.version)


@pytest.mark.parametrize("row", ROWS, ids=[str(r.network) for r in ROWS])
def test_each_row_refuses_both_ends(row):
    for address in (row.network[0], row.network[-1]):
        with pytest.raises(AddressRejected) as info:
            check_address(str(address), host="h.example.com")
        assert info.value.address == str(address)
        assert refusal(address) is not None


@pytest.mark.parametrize("row", ROWS, ids=[str(r.network) for r in ROWS])
def test_each_row_ends_where_it_says(row):
    """Just outside each row the verdict is the rest of the table's, not this row's."""
    first, last = int(row.network[0]), int(row.network[-1])
    cls = type(row.network[0])
    for value in (first - 1, last + 1):
        if not 0 <= value < 2**row.network.max_prefixlen:
            continue
        address = cls(value)
        if _covered(address):
            assert refusal(address) is not None
        else:
            assert check_address(str(address), host="h.example.com") == str(address)


def test_rows_document_their_source():
    for row in ROWS:
        assert row.name and row.reference


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "8.8.8.8",
        "1.1.1.1",
        "100.63.255.255",
        "100.128.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "192.167.255.255",
        "192.169.0.0",
        "198.17.255.255",
        "198.20.0.0",
        "223.255.255.255",
        "2606:4700::1111",
        "2a00:1450:4001::200e",
        "2001:200::1",  # just past 2001::/23
        "2001:4860:4860::8888",
    ],
)
def test_public_unicast_allowed(address):
    assert check_address(address, host="h.example.com") == str(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("10.1.2.3", "private"),
        ("100.100.100.200", "shared"),  # Alibaba Cloud metadata
        ("192.0.0.192", "IETF"),  # Oracle Cloud metadata
        ("168.63.129.16", "Azure"),
        ("0.0.0.0", "this network"),
        ("255.255.255.255", "broadcast"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fd00:ec2::254", "unique local"),  # AWS IPv6 metadata
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        # every way of smuggling an IPv4 address into IPv6, even a public one
        ("::ffff:127.0.0.1", "IPv4-mapped"),
        ("::ffff:8.8.8.8", "IPv4-mapped"),
        ("::127.0.0.1", "IPv4-compatible"),
        ("::8.8.8.8", "IPv4-compatible"),
        ("::ffff:0:8.8.8.8", "IPv4-translated"),
        ("64:ff9b::7f00:1", "NAT64"),
        ("64:ff9b::808:808", "NAT64"),
        ("64:ff9b:1::808:808", "NAT64"),
        ("2002:7f00:1::1", "6to4"),
        ("2002:808:808::1", "6to4"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        ("2001:db8::1", "documentation"),
        ("3fff::1", "documentation"),
        ("4000::1", "outside 2000::/3"),
        ("5f00::1", "SRv6"),
    ],
)
def test_special_addresses_refused(address, why):
    with pytest.raises(AddressRejected) as info:
        check_address(address, host="h.example.com")
    assert why in info.value.reason
    assert why in str(info.value)


@pytest.mark.parametrize(
    "answer",
    ["fe80::1%eth0", "2606:4700::1111%eth0", "127.1", "0x7f.0.0.1", "localhost", "", "1.2.3.4 "],
)
def test_odd_resolver_answers_refused(answer):
    with pytest.raises(AddressRejected):
        check_address(answer, host="h.example.com")


def test_stdlib_is_global_is_not_the_policy():
    # Documented reason for the explicit table: these are refused here whatever
    # ipaddress.is_global says on the running Python.
    for text in ("::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "192.0.0.9"):
        assert refusal(ipaddress.ip_address(text)) is not None
