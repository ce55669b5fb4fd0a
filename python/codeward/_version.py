"""Package and native-library versions (they are released together, with one version string).

The C core reports it, so importing the package does not need importlib.metadata
(about 50 ms of start-up on every `codeward` call).
"""

from . import _native

__version__: str = str(_native.version()["string"])


def native_version() -> str:
    """The C core's version string; equal to __version__ in a consistent install."""
    return str(_native.version()["string"])
