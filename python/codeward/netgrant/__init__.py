"""Network grants: one approved origin, mediated, for one command (docs/security.md).

A bash call that asks for ``request_network_grant`` and is confirmed runs
with a :class:`NetworkGrant`: its command gets a proxy on 127.0.0.1:3128
inside its sandbox, and the session's :class:`NetworkMediator` (outside the
sandbox) lets its connections reach that one host and port, resolved and
checked like the download tool's, and nothing else. The grant is pinned to
the sandbox policy digest the approver saw and ends with the command.
"""

from ._errors import NetworkGrantError
from ._grant import DEFAULT_PORTS, NetworkGrant, canonical_host
from ._mediator import PROXY_PORT, Admission, NetworkMediator

__all__ = [
    "DEFAULT_PORTS",
    "PROXY_PORT",
    "Admission",
    "NetworkGrant",
    "NetworkGrantError",
    "NetworkMediator",
    "canonical_host",
]
