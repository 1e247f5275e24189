"""Who can reach a server salon starts: both servers (the app, the environment) listen on
loopback unless told otherwise, and refuse a wider host without a login or an explicit flag."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable only from this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False
