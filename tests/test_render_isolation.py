"""The browser's own isolation, beneath the guard: nothing reaches a loopback listener, by any API.

The attack is another realm's fetch and WebRTC (STUN over UDP) against HTTP and UDP listeners on
127.0.0.1, run in a bare page with no guard and no policy, so only the way the browser runs can
stop it. A plain Chromium shows the attack and the listeners work; the namespace and the
fallback flags each stop it alone.
"""

from __future__ import annotations

import asyncio

import pytest

from render_support import HOSTILE, RecordingServer
from salon.curate.sandbox.chromium import BROWSER_NETWORK_ARGS, find_chromium
from salon.curate.sandbox.isolation import BROWSER_FLAGS, NETNS, _unshare_command, resolve_isolation
from salon.curate.sandbox.render import Renderer, RenderConfig
from salon.pool.errors import ConfigError

pytestmark = pytest.mark.browser

BARE_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
ATTACK = """async ([port, udp]) => {
  const f = document.createElement('iframe');
  document.body.appendChild(f);
  const W = f.contentWindow;
  try { await W.fetch('http://127.0.0.1:' + port + '/unguarded'); } catch (e) {}
  const pc = new W.RTCPeerConnection({iceServers: [{urls: 'stun:127.0.0.1:' + udp}]});
  pc.createDataChannel('x');
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((r) => setTimeout(r, 2500));
}"""
NAMESPACES = _unshare_command() is not None


async def _attack(executable: str, args: list[str]) -> list[str]:
    from playwright.async_api import async_playwright

    with RecordingServer() as server:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=executable, headless=True, args=args)
            page = await browser.new_page()
            try:  # the listener's own origin, so the fetch is same-origin where it can get there at all
                await page.goto(f"http://127.0.0.1:{server.port}/page", timeout=5000)
            except Exception:
                page = await browser.new_page()  # the failed one is on its error page
            await page.evaluate(ATTACK, [server.port, server.udp_port])
            await browser.close()
        await asyncio.sleep(0.5)
        return list(server.hits)


async def test_an_unisolated_browser_lets_the_attack_out():
    """The control: without isolation both listeners hear the attack (so silence below means something)."""
    hits = await _attack(find_chromium(), BARE_ARGS)
    assert any(h.startswith("UDP") for h in hits), hits
    assert "GET /page" in hits and "GET /unguarded" in hits


@pytest.mark.skipif(not NAMESPACES, reason="no network namespaces on this machine (the fallback is tested below)")
async def test_the_network_namespace_alone_stops_every_route():
    iso = resolve_isolation("netns", find_chromium())
    assert iso.name == NETNS
    assert await _attack(iso.executable, BARE_ARGS) == []


async def test_the_fallback_flags_alone_stop_webrtc_udp_and_requests():
    assert await _attack(find_chromium(), BARE_ARGS + BROWSER_NETWORK_ARGS) == []


async def test_every_result_names_the_isolation_in_force_and_the_fallback_works():
    expected = NETNS if NAMESPACES else BROWSER_FLAGS
    code = (HOSTILE / "iframe_webrtc.js").read_text()
    with RecordingServer() as server:
        for mode, name in (("auto", expected), ("browser-flags", BROWSER_FLAGS)):
            async with Renderer(RenderConfig(browsers=1, isolation=mode, render_rejects=True)) as renderer:
                assert renderer.isolation.name == name
                bad, rejected = await renderer.render(server.code(code)), await renderer.render("not a sketch")
            assert "external_access" in bad.violations and not bad.unavailable, bad
            assert bad.isolation == rejected.isolation == name
        await asyncio.sleep(0.5)
        assert server.hits == []


def test_isolation_setting_is_checked():
    with pytest.raises(ConfigError, match="isolation"):
        RenderConfig(isolation="none")
