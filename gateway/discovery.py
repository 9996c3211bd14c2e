"""The replicas behind a game's listed backends: a listed name stands for every address it
resolves to (a Kubernetes headless Service names its ready pods), a listed IP for itself.

``Resolver`` is the seam: the gateway asks the system resolver (asyncio's getaddrinfo); a
test hands in one whose records it controls.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable

# host -> its addresses (IP literals, either family); raises OSError when it does not resolve.
Resolver = Callable[[str], Awaitable[list[str]]]

# A resolver that hangs (an unreachable DNS server) must not hold the health loop.
RESOLVE_TIMEOUT_S = 2.0


async def system_resolver(host: str) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def split(address: str) -> tuple[str, str]:
    """``host:port`` or ``[v6]:port`` -> (host without brackets, port)."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), port


def join(host: str, port: str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _one_family(addresses: list[str]) -> list[str]:
    """IPv4 addresses when there are any, else IPv6: a dual-stack pod (or ``localhost``) has
    one of each, and counting it twice would double its share of matches."""
    v4 = [a for a in addresses if ipaddress.ip_address(a).version == 4]
    return v4 or addresses


async def expand(listed: tuple[str, ...], resolver: Resolver) -> tuple[str, ...]:
    """Every replica address behind ``listed``, sorted and without repeats.

    Raises OSError (or TimeoutError) when a listed name does not resolve: the caller keeps
    what it had rather than drop a game's replicas on a DNS hiccup."""
    found: set[str] = set()
    for address in listed:
        host, port = split(address)
        if _is_ip(host):
            found.add(join(host, port))
            continue
        async with asyncio.timeout(RESOLVE_TIMEOUT_S):
            records = await resolver(host)
        if not records:
            raise OSError(f"{host} resolved to no address")
        found.update(join(ip, port) for ip in _one_family(sorted(set(records))))
    return tuple(sorted(found))
