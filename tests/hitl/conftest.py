"""Fixtures of the confirmation tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confirm_helpers import GateProvider


@pytest.fixture
def gates() -> Iterator[list[GateProvider]]:
    """Gate providers created through this list are all released at teardown."""
    made: list[GateProvider] = []
    yield made
    for gate in made:
        gate.release.set()


@pytest.fixture
def gate(gates) -> GateProvider:
    g = GateProvider()
    gates.append(g)
    return g
