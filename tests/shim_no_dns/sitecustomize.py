"""Loaded at interpreter start when this folder is on PYTHONPATH (tests only): host names under `.invalid` do
not resolve, as on a machine without DNS, and no query leaves the machine to find that out."""

import socket

_getaddrinfo = socket.getaddrinfo


def _unresolvable(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    name = host.decode() if isinstance(host, bytes) else host
    if isinstance(name, str) and name.rstrip(".").endswith(".invalid"):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return _getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _unresolvable
