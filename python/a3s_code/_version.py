"""Package and native-library versions (they are released together)."""

from importlib import metadata

from . import _native

try:
    __version__ = metadata.version("a3s-code")
except metadata.PackageNotFoundError:  # running from a source tree
    __version__ = str(_native.version()["string"])


def native_version() -> str:
    """The C core's version string; equal to __version__ in a consistent install."""
    return str(_native.version()["string"])
