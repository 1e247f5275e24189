"""Who can reach a server salon starts: both servers (the app, the environment) listen on
loopback unless told otherwise, and refuse a wider host without a login or an explicit flag."""

from __future__ import annotations

import ipaddress
import sys


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable only from this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def refuses_open_host(command: str, host: str, insecure_no_auth: bool, exposes: str) -> bool:
    """True (after saying why on stderr) when `command` was asked to listen beyond loopback with no
    login and without --insecure-no-auth; `exposes` says what anyone on the network could then do."""
    if is_loopback(host) or insecure_no_auth:
        return False
    print(f"{command}: --host {host} would let anyone on the network {exposes}. Serve on loopback (the default) "
          "and reach it through an SSH tunnel or a proxy that checks tokens, or add --insecure-no-auth if that is "
          "really what you want", file=sys.stderr)
    return True
