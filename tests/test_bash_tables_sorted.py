"""The bash reader's name tables stay sorted (native/src/bash_split.c).

The reader looks a name up in its tables (wrappers, shells, keywords, variables that run
code ...) by halves, so a table out of byte order makes a lookup silently miss: a wrapper
added at the end of WRAPPERS would stop being read as one, and a deny rule on what it runs
would no longer hold. Nothing in C can check the order at build time; this test does, for
every table the source marks as sorted.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "native" / "src" / "bash_split.c"
MARK = re.compile(r"Sorted (?:by name )?in byte order")
TABLE = re.compile(r"static const [^=;]*?\b([A-Z_]+)\[\]\s*=\s*\{(.*?)\n?\s*\};", re.S)
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def sorted_tables() -> dict[str, list[bytes]]:
    """Each table that follows a "Sorted ... in byte order" comment, with its names."""
    text = SOURCE.read_text()
    tables: dict[str, list[bytes]] = {}
    for mark in MARK.finditer(text):
        table = TABLE.search(text, mark.end())
        assert table is not None, f"no table after the comment at offset {mark.start()}"
        name, body = table.group(1), table.group(2)
        if name in tables:
            continue
        # a table of structs: the name is each row's first string
        rows = re.findall(r"\{(\"[^\n]*)\}", body)
        names = [LITERAL.findall(row)[0] for row in rows] if rows else LITERAL.findall(body)
        tables[name] = [n.encode() for n in names]
    return tables


def test_every_table_marked_sorted_is_in_strict_byte_order() -> None:
    tables = sorted_tables()
    assert {"WRAPPERS", "SHELLS", "KEYWORDS", "SETS_VARS"} <= tables.keys(), tables.keys()
    for name, names in tables.items():
        assert len(names) >= 2, (name, names)
        for a, b in itertools.pairwise(names):
            assert a < b, f"{name}: {a!r} comes before {b!r}, out of byte order"


def test_every_exporting_builtin_sets_variables() -> None:
    # register_env looks a program up in EXPORTS only once SETS_VARS holds it
    tables = sorted_tables()
    assert set(tables["EXPORTS"]) <= set(tables["SETS_VARS"])
