"""Which Chromium the sandbox runs, and the switches every sandbox browser starts with.

    find_chromium()            # $SALON_CHROMIUM, then chromium on PATH; None: Playwright's own
    BASE_CHROMIUM_ARGS         # every browser; the GL path (gpu.py) adds its own

The lowest floor of the sandbox: the rest (isolation, gpu, pages, render) stands on it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from salon.pool.errors import SetupError

# Measured here: an about:blank iframe's RTCPeerConnection sent 4 STUN packets to a UDP listener
# on 127.0.0.1 with the proxy flags alone, none with the IP-handling policy below (and none in a
# namespace). `--force-webrtc-ip-handling-policy` did not stop them.
BROWSER_NETWORK_ARGS = [
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-quic",
    # Anything that escapes the page routing goes to a dead proxy, loopback included (Chromium
    # exempts loopback by default), and no host name resolves.
    "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
]


# Every browser gets these; the GL path (gpu.py) adds its own: `--disable-gpu` for SwiftShader.
BASE_CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-extensions", "--mute-audio", "--disable-breakpad", "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
    "--js-flags=--max-old-space-size=1024",
    # A reused page's earlier documents must never come back (history.back() into a cached one).
    "--disable-back-forward-cache",
    *BROWSER_NETWORK_ARGS,
]


def find_chromium(explicit: str = "") -> str | None:
    """A Chromium binary, or None to let Playwright use a browser it manages itself."""
    for c in (explicit, os.environ.get("SALON_CHROMIUM", "")):
        if c:
            if not Path(c).is_file():
                raise SetupError(f"Chromium not found at {c}")
            return c
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if path := shutil.which(name):
            return path
    return None
