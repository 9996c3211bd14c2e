"""The one place that reaches into granian beyond its public API.

granian's embedded server binds its socket itself, from an address and a port, when it
starts serving; the gateway must know its web port before that (port 0 in tests, and a busy
port is told at start-up rather than in the serving task). So the server here serves a
socket bound beforehand, through the private hook granian's start-up calls
(``_init_shared_socket``) and the socket holder its workers read. Both are private, so they
are used here only, for the granian release pinned in requirements.txt (``PINNED``):
tests/test_granian_private.py checks that the installed release is that one and that a
socket bound here is the one served, so an upgrade that breaks the hook fails there, by name.
"""

from __future__ import annotations

import socket
from typing import Any

from granian.net import SocketHolder
from granian.server.embed import Server as EmbeddedGranian

PINNED = "2.8.7"


class BoundGranian(EmbeddedGranian):
    """granian's embedded server (HTTP/1.1 and HTTP/2 framed in Rust, on this event loop),
    serving ``sock``, bound beforehand."""

    def __init__(self, sock: socket.socket, app: Any, backlog: int, **options: Any) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(app, address=host, port=port, backlog=backlog, **options)
        self._listen_backlog = backlog
        self._bound = sock.detach()  # granian's from here: it closes it

    def _init_shared_socket(self) -> None:
        # granian's stub gives SocketHolder no arguments; it takes the fd, uds and backlog.
        holder = SocketHolder(self._bound, False, self._listen_backlog)  # type: ignore[call-arg]
        self._ssp, self._shd = None, holder  # type: ignore[assignment]
