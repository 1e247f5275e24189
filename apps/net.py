"""Who can reach a server salon starts, and where it listens: both servers (the app, the
environment) listen on loopback unless told otherwise, and refuse a wider host without a login
or an explicit flag; the app binds its port before it builds anything (`listening_socket`)."""

from __future__ import annotations

import errno
import ipaddress
import socket
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


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (port 0: any free one), for uvicorn's `Server.run(sockets=...)`. Bound
    first, so a taken port is one line that says what to do, not uvicorn's error after the app was built."""
    from salon.pool.errors import SetupError

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise SetupError(f"port {port} on {host} is taken (another salon app, or another server): choose "
                             "another with --port N, or --port 0 for any free one") from None
        raise SetupError(f"cannot listen on {host}:{port} ({e.strerror}): choose another --host or --port") from None
    return sock
