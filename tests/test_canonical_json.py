"""The C canonical_json (_native.canonical_json) against its Python reference (_subject._encode).

The reference is the specification (docs/policy.md, "The argument string"); the C
function must print byte for byte the same text for every value it accepts, and
raise TypeError/ValueError (so that canonical_json falls back to the reference)
for every value it does not.
"""

from __future__ import annotations

import collections
import enum
import json
import math
import random
import struct
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeward import PermissionPolicy, PolicyError, _native
from codeward.policy import argument_string, canonical_json
from codeward.policy._subject import _encode

c_json = _native.canonical_json


def reference(value: Any) -> str:
    out: list[str] = []
    _encode(value, out)
    return "".join(out)


def assert_same(value: Any) -> str:
    expected = reference(value)
    got = c_json(value)
    assert got == expected, (value, got, expected)
    assert canonical_json(value) == expected
    return got


# ---------------------------------------------------------------------------
# random values
# ---------------------------------------------------------------------------

SPECIAL_FLOATS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.1,
    0.5,
    1.5,
    2.25,
    5e-324,  # smallest subnormal
    2.225073858507201e-308,  # largest subnormal
    2.2250738585072014e-308,  # smallest normal
    1.7976931348623157e308,
    1e-7,
    1.5e-7,
    1e-6,
    1.234e-6,
    123e-20,
    1e20,
    1e21,
    1.5e21,
    999999999999999900000.0,
    2.0**53,
    2.0**53 + 2,
    2.0**53 - 1,
    2.0**63,
    -(2.0**63),
    2.0**64,
    2.0**60,
    9007199254740993.0,
    1e16,
    1e15 + 0.5,
    123456789.125,
    math.pi,
    -math.e,
    math.nan,
    math.inf,
    -math.inf,
]

INTS = [
    0,
    1,
    -1,
    2**31,
    2**53,
    2**53 + 1,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64,
    -(2**64),
    10**100,
    -(10**300),
]


def random_float(rng: random.Random) -> float:
    r = rng.random()
    if r < 0.2:
        return rng.choice(SPECIAL_FLOATS)
    if r < 0.45:  # any bit pattern: subnormals, huge, tiny, NaN payloads
        return float(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
    if r < 0.6:  # integral
        return float(rng.randint(-(2**70), 2**70)) * rng.choice([1, 1, 10 ** rng.randint(0, 30)])
    if r < 0.8:  # short decimals, like people write them
        return round(rng.uniform(-1e6, 1e6), rng.randint(0, 6))
    return rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30)


def random_int(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.3:
        return rng.choice(INTS) + rng.randint(-2, 2)
    if r < 0.7:
        return rng.randint(-1000, 100000)
    return rng.getrandbits(rng.randint(1, 400)) * rng.choice([1, -1])


# Code point pools: controls, JSON specials, ASCII, Latin-1, BMP (private use and
# the last code points included), astral. Never a surrogate: those fall back.
CHAR_POOLS = [
    [chr(c) for c in range(0x20)] + ["\x7f", '"', "\\", "/"],
    [chr(c) for c in range(0x20, 0x7F)],
    [chr(c) for c in range(0x80, 0x100)],
    ["\u2028", "\u2029", "\ufeff", "\ufffd", "\uffff", "\ue000", "\uf8ff", "\ud7ff", "\u00e9"],
    ["\U00010000", "\U0001f600", "\U0010ffff", "\U000e0001", "\U0002a6d6"],
]


def random_char(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.5:
        return rng.choice(CHAR_POOLS[1])
    if r < 0.6:
        return rng.choice(CHAR_POOLS[0])
    if r < 0.7:
        return rng.choice(CHAR_POOLS[2])
    if r < 0.8:
        return rng.choice(CHAR_POOLS[3])
    if r < 0.9:
        return rng.choice(CHAR_POOLS[4])
    c = rng.randint(0x80, 0x10FFFF)
    return chr(c) if not 0xD800 <= c <= 0xDFFF else "x"


def random_str(rng: random.Random) -> str:
    n = rng.choice([0, 1, 1, 2, 3, 5, 8, 20, rng.randint(0, 300)])
    return "".join(random_char(rng) for _ in range(n))


def random_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 5 or r < 1 - 0.5 / (depth + 1):  # containers get rarer as they nest
        s = rng.random()
        if s < 0.3:
            return random_str(rng)
        if s < 0.5:
            return random_int(rng)
        if s < 0.8:
            return random_float(rng)
        return rng.choice([None, True, False])
    n = rng.choice([0, 1, 2, 3, 4, 6, 9, rng.randint(0, 24)])
    if rng.random() < 0.6:
        return {random_str(rng): random_value(rng, depth + 1) for _ in range(n)}
    items = [random_value(rng, depth + 1) for _ in range(n)]
    return tuple(items) if rng.random() < 0.2 else items


def random_values(count: int, seed: int) -> Iterator[Any]:
    rng = random.Random(seed)
    for _ in range(count):
        yield random_value(rng)


def test_random_values_match_the_reference() -> None:
    count = 0
    for value in random_values(25_000, seed=0xC0FFEE):
        assert c_json(value) == reference(value), value
        count += 1
    assert count == 25_000


def test_random_floats_match_the_reference() -> None:
    rng = random.Random(7)
    for _ in range(30_000):
        x = random_float(rng)
        assert c_json(x) == reference(x), repr(x)
        assert c_json(-x) == reference(-x), repr(-x)


def test_random_ints_match_the_reference() -> None:
    rng = random.Random(11)
    for _ in range(10_000):
        n = random_int(rng)
        assert c_json(n) == reference(n) == str(n)


# ---------------------------------------------------------------------------
# hypothesis
# ---------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**60), max_value=10**60)
    | st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
    | st.text(alphabet=st.characters(blacklist_categories=["Cs"]))
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children)
        | st.lists(children).map(tuple)
        | st.dictionaries(st.text(alphabet=st.characters(blacklist_categories=["Cs"])), children)
    ),
    max_leaves=30,
)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(json_values)
def test_hypothesis_values_match_the_reference(value: Any) -> None:
    assert_same(value)


# ---------------------------------------------------------------------------
# explicit cases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (0.0, "0"),
        (0.1, "0.1"),
        (-1.5, "-1.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (2.0**60, "1152921504606847000"),
        (2.0**53, "9007199254740992"),
        (1e16, "10000000000000000"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (123e-20, "1.23e-18"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (2**64, "18446744073709551616"),
        (-(2**63), "-9223372036854775808"),
        ([], "[]"),
        ((), "[]"),
        ({}, "{}"),
        ({"b": [1, 2.5, None], "a": (True,)}, '{"a":[true],"b":[1,2.5,null]}'),
    ],
)
def test_known_texts(value: Any, text: str) -> None:
    assert assert_same(value) == text


def test_keys_sort_by_code_point_not_utf16() -> None:
    # UTF-16 order (JavaScript's default sort) would put the astral key before U+E000.
    value = {"\U0001f600": 1, "\ue000": 2, "\uffff": 3, "a": 4, "": 5, "a\x00": 6, "\x7f": 7}
    assert (
        assert_same(value)
        == '{"":5,"a":4,"a\\u0000":6,"\x7f":7,"\ue000":2,"\uffff":3,"\U0001f600":1}'
    )


def test_many_keys_sort_like_sorted() -> None:
    rng = random.Random(3)
    for size in (7, 8, 9, 16, 17, 200, 5000):
        value = {random_str(rng) + str(i): i for i in range(size)}
        text = assert_same(value)
        assert list(json.loads(text)) == sorted(value)


def test_escapes_are_minimal() -> None:
    every_control = "".join(chr(c) for c in range(0x20))
    text = assert_same(every_control + '"\\/\x7f\u2028\U0001f600é')
    assert text == json.dumps(every_control + '"\\/\x7f\u2028\U0001f600é', ensure_ascii=False)
    assert text.startswith('"\\u0000\\u0001')
    assert "\\b\\t\\n\\u000b\\f\\r" in text
    assert "\\u001f" in text and "\\u001F" not in text
    assert text.endswith('\\"\\\\/\x7f\u2028\U0001f600é"')
    assert assert_same({"\n": "\t"}) == '{"\\n":"\\t"}'


def test_long_output_grows_the_buffer() -> None:
    value = {"k": ["x" * 100_000, "\x01" * 5000, list(range(3000))]}
    assert_same(value)


def test_nesting_depth_limit() -> None:
    ok: Any = []
    for _ in range(999):
        ok = [ok]  # 1000 lists
    assert c_json(ok) == "[" * 1000 + "]" * 1000
    too_deep: Any = [ok]
    with pytest.raises(ValueError, match="nested too deeply"):
        c_json(too_deep)
    with pytest.raises(PolicyError, match="nested too deeply"):
        canonical_json(too_deep)
    deep_dict: Any = 1
    for _ in range(1001):
        deep_dict = {"k": deep_dict}
    with pytest.raises(ValueError, match="nested too deeply"):
        c_json(deep_dict)
    with pytest.raises(PolicyError, match="nested too deeply"):
        argument_string("mcp__x__y", deep_dict)


def test_cycles_are_rejected() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(ValueError):
        c_json(loop)
    with pytest.raises(PolicyError, match="nested too deeply"):
        canonical_json({"a": loop})


def test_non_string_keys_fall_back_to_policy_error() -> None:
    for value in ({1: 2}, {"a": 1, 2: 3}, {"x": {None: 1}}, [{(1,): 1}]):
        with pytest.raises(TypeError):
            c_json(value)
        with pytest.raises(PolicyError, match="non-string key"):
            canonical_json(value)
    with pytest.raises(PolicyError, match="non-string key"):
        PermissionPolicy().check("custom", {"x": {1: 2}})
    with pytest.raises(PolicyError, match="non-string key"):
        argument_string("custom", {1: 2})


def test_lone_surrogates_fall_back() -> None:
    for value in ("\ud800", {"\udfff": 1}, {"k": ["a\ud83dx"]}, "\ud83d\ude00"):
        with pytest.raises(UnicodeEncodeError):
            c_json(value)
        assert canonical_json(value) == reference(value)
    assert canonical_json({"q": "\ud800"}) == '{"q":"\ud800"}'
    p = PermissionPolicy(deny=['mcp__x(**"\ud800"**)'], allow=["mcp__x"])
    assert p.check("mcp__x", {"q": "\ud800"}).name == "DENY"


class Color(enum.IntEnum):
    RED = 1


class Text(str):
    def __str__(self) -> str:
        return "overridden"


class Real(float):
    pass


class Loud(int):
    def __repr__(self) -> str:
        return "loud"

    __str__ = __repr__


class Frozen(Mapping[str, Any]):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


Point = collections.namedtuple("Point", "x y")


def test_subclasses_print_as_their_base() -> None:
    # Handled in C, like the reference: an int subclass is its int, a str subclass its text.
    assert (
        assert_same([Color.RED, Text("a\n"), 10**30 * Color.RED])
        == '[1,"a\\n",' + str(10**30) + "]"
    )
    assert assert_same({"k": Text("v")}) == '{"k":"v"}'
    assert assert_same([Loud(7), Loud(-(2**64)), Loud(10**40)]) == f"[7,{-(2**64)},{10**40}]"


@pytest.mark.parametrize(
    "value",
    [
        Real(1.5),
        [Real(2.0)],
        collections.OrderedDict(b=1, a=2),
        types.MappingProxyType({"z": 1.0, "a": [1]}),
        {"m": Frozen({"y": 2, "x": [0.5]})},
        Point(1, 2.5),
        {Text("b"): 1, "a": 2},
        collections.defaultdict(list, {"a": []}),
    ],
)
def test_other_types_fall_back_to_the_reference(value: Any) -> None:
    with pytest.raises(TypeError):
        c_json(value)
    assert canonical_json(value) == reference(value)


def test_unrepresentable_values_still_raise_policy_error() -> None:
    for value in (object(), {"x": object()}, [b"bytes"], {"s": {1, 2}}):
        with pytest.raises(TypeError):
            c_json(value)
        with pytest.raises(PolicyError, match="not representable as JSON"):
            canonical_json(value)


def test_int_beyond_the_str_digit_limit_raises_like_the_reference() -> None:
    if not hasattr(sys, "get_int_max_str_digits"):
        pytest.skip("no int digit limit")
    huge = 10 ** (sys.get_int_max_str_digits() + 10)
    with pytest.raises(ValueError):
        reference(huge)
    with pytest.raises(ValueError):
        canonical_json({"n": huge})


def test_no_reference_leaks_on_any_path() -> None:
    key, value, item = "k" + "ey" * 3, ["v"], "s" * 5
    bad = {key: value, 1: 2}
    deep: Any = [item]
    for _ in range(1000):
        deep = [deep]
    before = (sys.getrefcount(key), sys.getrefcount(value), sys.getrefcount(item))
    for _ in range(200):
        c_json({key: value, "z": [item, 1.5, 2**70]})
        for broken in (bad, deep, {key: [item, "\udc80"]}):
            with pytest.raises((TypeError, ValueError)):
                c_json(broken)
        del broken
    assert (sys.getrefcount(key), sys.getrefcount(value), sys.getrefcount(item)) == before


def test_bench_workload_arguments_match() -> None:
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent.parent / "bench" / "policy"))
    try:
        import workload
    finally:
        sys.path.pop(0)
    for tool, args in workload.tool_calls(5000):
        assert_same(args)
        subject = argument_string(tool, args)[1]
        if workload.kind_of(tool) in ("mcp", "json"):
            assert subject == reference(args)
