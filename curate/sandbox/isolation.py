"""How the render browsers are kept off the network: a network namespace, or browser settings.

    python -m salon.curate.sandbox.isolation        # print which isolation this machine gives, and why

The page guard and the request routes *report* what a sketch reaches for; this module makes
sure that whatever gets past them can still reach nothing. Two levels, best first:

- `netns`: Chromium runs in a network namespace of its own (`unshare --net`, with a user
  namespace when not root). Its only interface is its own loopback, which stays down, so no
  API, realm or protocol (WebRTC's UDP, QUIC, WebSocketStream, whatever Chromium adds next)
  has a route anywhere. Playwright talks to the browser over a pipe and needs no network.
- `browser-flags`: where namespaces cannot be made (no user namespaces, some containers):
  WebRTC may send only proxied UDP (that is, none), QUIC off, every request to a dead proxy,
  every host name unresolvable.

The browser-level settings are on in both cases (`chromium.BROWSER_NETWORK_ARGS`); the namespace is the
guarantee, the flags the fallback. `RenderConfig.isolation` picks: `auto` (the best available),
`netns` (or a SetupError), `browser-flags`. Which one is in force is logged once per process
and named on every RenderResult (`isolation`).
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from salon.curate.sandbox.chromium import find_chromium

log = logging.getLogger(__name__)

ISOLATION_MODES = ("auto", "netns", "browser-flags")
NETNS = "netns"
BROWSER_FLAGS = "browser-flags"

@dataclass(frozen=True)
class Isolation:
    name: str  # NETNS or BROWSER_FLAGS
    executable: str | None  # what Playwright launches: a wrapper that enters the namespace, or Chromium
    reason: str = ""  # why the namespace is not in force (browser-flags only)


def _unshare_command() -> list[str] | None:
    """The unshare invocation that makes a network namespace here, or None when none can be made."""
    unshare = shutil.which("unshare")
    if not unshare:
        return None
    # Root makes the namespace directly; anyone else needs a user namespace to hold the capability.
    cmd = [unshare, "--net"] if os.geteuid() == 0 else [unshare, "--user", "--map-root-user", "--net"]
    try:
        probe = subprocess.run(cmd + ["true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return cmd if probe.returncode == 0 else None


_wrappers: dict[str | None, Isolation] = {}  # one decision (and one wrapper file) per process and binary


def resolve_isolation(mode: str, chromium: str | None) -> Isolation:
    """The isolation for `RenderConfig.isolation`; `chromium` is the real browser binary."""
    from salon.pool.errors import SetupError

    if mode == BROWSER_FLAGS:
        return Isolation(BROWSER_FLAGS, chromium, "chosen in RenderConfig.isolation")
    if chromium in _wrappers:
        found = _wrappers[chromium]
    else:
        found = _wrappers[chromium] = _build(chromium)
        if found.name == NETNS:
            log.info("render: Chromium runs in a network namespace of its own (no interface but a down loopback)")
        else:
            log.warning("render: no network namespace here (%s); isolation by browser flags: WebRTC without "
                        "UDP, QUIC off, a dead proxy", found.reason)
    if mode == NETNS and found.name != NETNS:
        raise SetupError(f"render isolation=netns, but {found.reason}. Allow user namespaces "
                         "(sysctl kernel.unprivileged_userns_clone=1), run as root, or use isolation=auto")
    return found


def _build(chromium: str | None) -> Isolation:
    if chromium is None:
        return Isolation(BROWSER_FLAGS, None, "Playwright's own browser is used (no Chromium binary to wrap)")
    if not sys.platform.startswith("linux"):
        return Isolation(BROWSER_FLAGS, chromium, "network namespaces exist on Linux only")
    cmd = _unshare_command()
    if cmd is None:
        return Isolation(BROWSER_FLAGS, chromium, "`unshare --net` fails here (no user namespaces, or no util-linux)")
    folder = Path(tempfile.mkdtemp(prefix="salon-netns-"))
    wrapper = folder / "chromium"
    # exec twice over: unshare enters the namespace and execs Chromium, so the process Playwright
    # started (and will kill) is the browser itself, with the pipe descriptors it inherited.
    wrapper.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(c) for c in cmd) + " -- "
                       + shlex.quote(chromium) + ' "$@"\n')
    wrapper.chmod(0o755)
    return Isolation(NETNS, str(wrapper))


def main() -> int:
    iso = resolve_isolation("auto", find_chromium())
    print(iso.name + (f"  ({iso.reason})" if iso.reason else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
