"""The ``codeward`` command line: inspect this machine, test and lint permission policies."""

from ._main import main

__all__ = ["main"]
