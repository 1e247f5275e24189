"""The curation app end to end: `salon app` as a subprocess on 127.0.0.1, Debian Chromium.

Keys, undo, filters, grid (and its thumbnails' size), a pairwise choice, then the store; a
SIGKILL mid-session loses no acknowledged label and the page re-sends the rest; two logged-in
labelers at once; a wrong password; the named endpoints through gradio_client (label, queue,
card, push to a fake Hub, a generation run against a loopback OpenAI-compatible server).

    .venv/bin/python -m pytest -q tests/test_app_browser.py
"""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from salon.pool import Candidate, Pool

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("SALON_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--no-first-run"]
ACK = ".salon-label .salon-ack"


def png(seed: int) -> bytes:
    from PIL import Image

    blocks = np.random.default_rng(seed).integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(np.kron(blocks, np.ones((8, 8, 1), dtype=np.uint8))).save(buf, "PNG")
    return buf.getvalue()


def make_pool(folder: Path, n_ok: int = 8) -> list[str]:
    """n_ok gate-passing paintings (models m:a / m:b alternate), then a reject, then a
    candidate whose render failed (no image). Returns the ids in pool order."""
    cands = [Candidate(code=f"// painting {i}", seed=i, subject="pear", model=f"m:{'ab'[i % 2]}",
                       ok=True, png=png(i)) for i in range(n_ok)]
    cands.append(Candidate(code="// blank", seed=0, subject="pear", model="m:a", ok=False,
                           violations=["blank_canvas"], png=png(100)))
    cands.append(Candidate(code="// never rendered", seed=0, subject="pear", model="m:b", ok=None))
    with Pool.open(folder, create=True) as pool:
        pool.add_candidates(cands)
    return [c.id for c in cands]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class App:
    """`salon app` in a subprocess; `start()` again after a kill reuses the port."""

    def __init__(self, pool: Path, *args: str, env: dict | None = None):
        self.pool, self.args, self.port = pool, args, free_port()
        self.env = os.environ | {"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"} | (env or {})
        self.url = f"http://127.0.0.1:{self.port}/"

    def start(self) -> App:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "salon.apps.cli", "app", "--pool", str(self.pool),
             *([] if (Path(self.pool) / "pool.db").exists() else ["--new"]),  # a test's fresh pool
             "--port", str(self.port), *self.args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env)
        for line in self.proc.stdout:
            if "Running on local URL:" in line:
                return self
        raise RuntimeError(f"salon app exited with {self.proc.wait()}")

    def stop(self, sig=signal.SIGTERM) -> None:
        self.proc.send_signal(sig)
        self.proc.wait(30)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def fake_hub():
    import hubserver

    with hubserver.serve() as (url, hub):
        yield url, hub


@pytest.fixture(scope="module")
def chat():
    from curate_openai_server import ChatServer

    examples = Path(__file__).parents[1] / "curate/examples"
    sketches = [(examples / f).read_text() for f in ("hibiscus_01_sketch.js", "hibiscus_02_five_petals.js")]
    with ChatServer(sketches) as server:
        yield server


class KeyRecorder:
    """A loopback HTTP server that records the Authorization header of every request it gets
    and refuses them all (401), so a generation run against it stops at once."""

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                seen.append(self.headers.get("Authorization"))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(401)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def hub_env(fake_hub) -> dict:
    return {"HF_ENDPOINT": fake_hub[0], "HF_TOKEN": "test-token", "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_OFFLINE": "0"}


@pytest.fixture(scope="module")
def app(tmp_path_factory, fake_hub, chat):
    folder = tmp_path_factory.mktemp("app") / "pool"
    ids = make_pool(folder)
    with Pool.open(folder, create=True) as pool:  # the 8th painting's file goes missing
        pool.image_path(ids[7]).unlink()
        pool.label(ids[0], "love", "zoe")  # another labeler's tier, hidden from ann until she labels
    a = App(folder, "--user", "ann", "--base-url", chat.base_url, env=hub_env(fake_hub)).start()
    a.ids = ids
    yield a
    a.stop()


def open_page(context_or_browser, url: str):
    page = context_or_browser.new_page()
    page.goto(url)
    page.wait_for_selector(".salon-stage[data-id]")
    return page


def login(browser, url: str, user: str, password: str):
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    page.get_by_label("username").fill(user)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Login").click()
    return context, page


def shown(page) -> str:
    return page.get_attribute(".salon-stage", "data-id")


def press(page, key: str, expect: str) -> None:
    page.keyboard.press(key)
    page.wait_for_function(f"document.querySelector('.salon-stage').dataset.id === '{expect}'")


def wait_acked(page, n: int, badge: str = ACK) -> None:
    page.wait_for_function(f"(b => b.dataset.acked === '{n}' && b.dataset.pending === '0')"
                           f"(document.querySelector('{badge}'))", timeout=30_000)


def mine(folder: Path, who: str) -> dict[str, str]:
    with Pool.open(folder, create=True) as pool:
        return {cid: by[who] for cid, by in pool.current_labels().items() if who in by}


def test_keys_undo_filters_grid_and_compare(app, browser):
    from playwright.sync_api import expect

    c = app.ids
    page = open_page(browser, app.url)
    assert shown(page) == c[0]  # keys work at once: no click first
    # zoe's tier of c0 is neither on the page nor in the item's data before ann labels it.
    page.wait_for_selector(".salon-meta dl")
    assert "shown once you label it" in page.inner_text(".salon-meta")
    assert "zoe" not in page.content()
    assert page.evaluate(f"window.salon.label.items.get('{c[0]}')")["labels"] == {}
    press(page, "1", c[1])
    press(page, "2", c[2])
    press(page, "3", c[3])
    press(page, "s", c[4])
    press(page, "u", c[2])          # undo the nope of c2: back to it
    press(page, "Backspace", c[1])  # undo the okay of c1
    press(page, "ArrowRight", c[2])
    press(page, "ArrowLeft", c[1])
    wait_acked(page, 5)
    assert mine(app.pool, "ann") == {c[0]: "love"}
    press(page, "ArrowLeft", c[0])  # labelled now: the others' tiers and the consensus show
    page.wait_for_function("document.querySelector('.salon-meta').innerText.includes('zoe: love')")
    assert "love (zoe: love)" in page.inner_text(".salon-meta")
    press(page, "ArrowRight", c[1])
    with Pool.open(app.pool, create=True) as pool:
        assert [r.tier for r in pool.label_history(c[2])] == ["nope", None]

    # A key typed into a field is text, not a label.
    page.evaluate("document.querySelector('.salon-label').append(Object.assign("
                  "document.createElement('input'), {id: 'typing'}))")
    page.focus("#typing")
    page.keyboard.press("3")
    page.evaluate("document.activeElement.blur()")
    press(page, "2", c[2])
    wait_acked(page, 6)
    assert mine(app.pool, "ann") == {c[0]: "love", c[1]: "okay"}

    # The painting whose file went missing says so; so does the candidate without a render.
    for i in range(3, 8):
        press(page, "ArrowRight", c[i])
    assert "missing" in page.inner_text(".salon-stage")
    page.check("[data-f=rejects]")
    page.wait_for_function(f"window.salon.label.ids.includes('{c[9]}')")
    assert c[8] in page.evaluate("window.salon.label.ids")
    page.evaluate(f"(v => {{ v.pos = v.ids.indexOf('{c[9]}'); v.show(); }})(window.salon.label)")
    page.wait_for_function("document.querySelector('.salon-stage').innerText.includes('no image')")

    # Filters: tier view, model.
    page.uncheck("[data-f=rejects]")
    page.select_option("[data-f=view]", "love")
    page.wait_for_function(f"window.salon.label.ids.length === 1 && "
                           f"document.querySelector('.salon-stage').dataset.id === '{c[0]}'")
    page.select_option("[data-f=view]", "all")
    page.select_option("[data-f=model]", "m:b")
    page.wait_for_function(f"document.querySelector('.salon-stage').dataset.id === '{c[1]}'")
    assert page.evaluate("window.salon.label.ids") == [c[i] for i in (1, 3, 5, 7)]

    # Grid: the love tier holds c0; open it and relabel it nope.
    page.get_by_role("tab", name="Grid").click()
    page.get_by_label("love (1)").check()
    thumbs = page.locator("#salon-grid img")
    expect(thumbs).to_have_count(1)
    thumbs.first.click()
    expect(page.locator("#salon-grid-info")).to_contain_text(c[0][:12])
    expect(page.locator("#salon-grid-info")).to_contain_text("zoe: love")  # the grid is for review
    page.click("#salon-grid-nope")
    expect(page.locator("#salon-grid-info")).to_contain_text("your label: nope")
    assert mine(app.pool, "ann")[c[0]] == "nope"

    # Compare: left arrow prefers the painting shown on the left.
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("[data-side=left][data-id]")
    left = page.get_attribute("[data-side=left]", "data-id")
    right = page.get_attribute("[data-side=right]", "data-id")
    page.keyboard.press("ArrowLeft")
    wait_acked(page, 7, ".salon-compare .salon-ack")
    with Pool.open(app.pool, create=True) as pool:
        choice = pool.pair_choices()[-1]
    assert (choice.left_id, choice.right_id, choice.winner, choice.shown_left, choice.labeler) \
        == (left, right, "left", left, "ann")
    assert mine(app.pool, "ann")[c[0]] == "nope"  # compare keys never label
    page.close()


def thumbnails(page, n: int) -> list[dict]:
    """The grid's n thumbnails as they are laid out: x, y and width in CSS pixels."""
    from playwright.sync_api import expect

    expect(page.locator("#salon-grid img")).to_have_count(n)
    return page.evaluate("[...document.querySelectorAll('#salon-grid .thumbnail-item')].map(e => "
                         "(({x, y, width}) => ({x, y, width}))(e.getBoundingClientRect()))")


def test_grid_thumbnails_stay_thumbnails_however_few(tmp_path, browser):
    """A tier of two paintings shows two ~200 px thumbnails side by side, not two half-page images
    (Gradio stretched too few to the width); a fuller tier puts six on a row."""
    ids = make_pool(tmp_path / "pool")
    with Pool.open(tmp_path / "pool", create=True) as pool:
        for cid in ids[:2]:
            pool.label(cid, "love", "ann")
    app = App(tmp_path / "pool", "--user", "ann").start()
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(app.url)
        page.get_by_role("tab", name="Grid").click()
        page.get_by_label("love (2)").check()
        love = thumbnails(page, 2)
        assert all(150 <= t["width"] <= 260 for t in love), love
        assert love[0]["y"] == love[1]["y"] and love[1]["x"] > love[0]["x"]
        page.get_by_label("unlabelled (8)").check()  # six paintings, the reject; the unrendered one has no thumbnail
        rest = thumbnails(page, 7)
        assert [t["y"] == rest[0]["y"] for t in rest] == [True] * 6 + [False]
        assert all(150 <= t["width"] <= 260 for t in rest), rest
        page.close()
    finally:
        app.stop()


def test_sigkill_loses_no_acknowledged_label(tmp_path, browser):
    ids = make_pool(tmp_path / "pool", n_ok=10)
    app = App(tmp_path / "pool", "--user", "kim").start()
    context = browser.new_context()
    page = open_page(context, app.url)
    keys = "12312"
    for i, k in enumerate(keys):
        press(page, k, ids[i + 1])
    wait_acked(page, len(keys))
    for k in "331":  # in flight when the app dies
        page.keyboard.press(k)
    app.stop(signal.SIGKILL)
    tiers = {"1": "love", "2": "okay", "3": "nope"}
    acked = {ids[i]: tiers[k] for i, k in enumerate(keys)}
    stored = mine(tmp_path / "pool", "kim")
    assert {k: stored.get(k) for k in acked} == acked
    # Back on the same port, the page re-sends what was never acknowledged, without a reload.
    app.start()
    page.wait_for_function(f"document.querySelector('{ACK}').dataset.pending === '0'", timeout=60_000)
    assert mine(tmp_path / "pool", "kim") == acked | {ids[5]: "nope", ids[6]: "nope", ids[7]: "love"}
    context.close()
    app.stop()


def test_two_labelers_at_once_and_a_wrong_password(tmp_path, browser):
    ids = make_pool(tmp_path / "pool")
    app = App(tmp_path / "pool", "--auth", "alice:pw-a", "--auth", "bob:pw-b").start()
    pages = []
    for user, password in (("alice", "pw-a"), ("bob", "pw-b")):
        context, page = login(browser, app.url, user, password)
        page.wait_for_selector(".salon-stage[data-id]")
        pages.append(page)
    for i in range(6):  # interleaved: both label the same paintings at the same time
        pages[0].keyboard.press("1")
        pages[1].keyboard.press("3")
    for page in pages:
        wait_acked(page, 6)
    assert mine(tmp_path / "pool", "alice") == {i: "love" for i in ids[:6]}
    assert mine(tmp_path / "pool", "bob") == {i: "nope" for i in ids[:6]}

    context, page = login(browser, app.url, "alice", "wrong")
    page.get_by_text("Incorrect credentials").wait_for()
    assert page.request.get(app.url + "salon/api/me").status == 401
    assert page.request.get(app.url + f"salon/img/{ids[0]}").status == 401
    context.close()
    app.stop()


def test_named_endpoints_with_gradio_client(app, fake_hub):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    c = app.ids
    client = Client(app.url, verbose=False, download_files=False, analytics_enabled=False)
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert set(named) == {"/label", "/undo", "/pair_choice", "/queue", "/stats", "/grid", "/generate",
                          "/generation_status", "/card", "/push"}
    row = client.predict(c[6][:10], "love", api_name="/label")
    assert (row["id"], row["labeler"], row["consensus"]) == (c[6], "ann", "love")
    assert c[6] not in client.predict("unlabelled", "", "", api_name="/queue")
    assert client.predict(c[6], api_name="/undo")["consensus"] is None
    with pytest.raises(AppError, match="unknown tier 'great'"):
        client.predict(c[6], "great", api_name="/label")
    assert client.predict(c[4], c[5], "tie", api_name="/pair_choice")["winner"] == "tie"
    assert client.predict(api_name="/stats")["candidates"] == 10
    client.predict(c[5], "okay", api_name="/label")
    assert c[5] in client.predict("okay", 1, api_name="/grid")

    # The file that went missing stops an export until `salon pool check --fix` detaches it.
    with pytest.raises(AppError, match="check"):
        client.predict(api_name="/card")
    with Pool.open(app.pool, create=True) as pool:
        assert pool.check(fix=True) == [c[7]]
    assert "salon painting pool" in client.predict(api_name="/card")
    text = client.predict("me/salon-pool", False, "", api_name="/push")
    with Pool.open(app.pool, create=True) as pool:
        release = pool.releases()[-1]
    assert release.repo_id == "me/salon-pool" and release.revision in text


def wait_generated(client, status: str) -> str:
    deadline = time.monotonic() + 240
    while "done" not in status and "failed" not in status and time.monotonic() < deadline:
        time.sleep(1)
        status = client.predict(api_name="/generation_status")
    return status


def test_generate_view_runs_in_the_background(app, chat):
    from gradio_client import Client

    client = Client(app.url, verbose=False, download_files=False, analytics_enabled=False)
    status = client.predict("peach hibiscus", "openai:examples", 2, chat.base_url, False, 0,
                            api_name="/generate")
    assert "running" in status or "done" in status
    status = wait_generated(client, status)
    assert "done: **2** new candidates" in status, status
    with Pool.open(app.pool, create=True) as pool:
        new = [x.id for x in pool.candidates(subject="peach hibiscus", model="openai:examples")]
    assert len(new) == 2
    queue = client.predict("unlabelled", "openai:examples", "", api_name="/queue")
    assert queue and set(queue) <= set(new)  # they joined the label queue


def test_only_admins_push_and_generate_and_the_key_goes_only_where_configured(tmp_path, browser, fake_hub):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    make_pool(tmp_path / "pool")
    with KeyRecorder() as configured, KeyRecorder() as typed_in:
        app = App(tmp_path / "pool", "--auth", "alice:pw-a", "--auth", "bob:pw-b", "--admin", "alice",
                  "--base-url", configured.base_url,
                  env=hub_env(fake_hub) | {"OPENAI_API_KEY": "sk-host-secret"}).start()
        try:
            def client(user: str, password: str):
                return Client(app.url, auth=(user, password), verbose=False, download_files=False,
                              analytics_enabled=False)

            run = ("pear", "openai:any", 1, configured.base_url, False, 0)
            bob = client("bob", "pw-b")
            with pytest.raises(AppError, match="only the app's admins may push to the Hub"):
                bob.predict("bob/pool", False, "", api_name="/push")
            with pytest.raises(AppError, match="only the app's admins may generate"):
                bob.predict(*run, api_name="/generate")

            # The page's buttons reach the same refusal.
            context, page = login(browser, app.url, "bob", "pw-b")
            page.get_by_role("tab", name="Publish").click()
            page.get_by_label("dataset repo id").fill("bob/pool")
            page.get_by_role("button", name="Push to the Hub").click()
            page.get_by_text("only the app's admins may push").first.wait_for()
            page.get_by_role("tab", name="Generate").click()
            page.get_by_label("models").fill("openai:any")
            page.click("#salon-generate")
            page.get_by_text("only the app's admins may generate").first.wait_for()
            context.close()
            with Pool.open(tmp_path / "pool", create=True) as pool:
                assert pool.releases() == []
            assert configured.seen == []

            # An admin's typed-in base URL is refused before any request: the key never leaves.
            alice = client("alice", "pw-a")
            with pytest.raises(AppError, match="is not in the list of choices"):
                alice.predict("pear", "openai:any", 1, typed_in.base_url, False, 0, api_name="/generate")
            status = wait_generated(alice, alice.predict(*run, api_name="/generate"))
            assert "done" in status, status
            assert configured.seen and set(configured.seen) == {"Bearer sk-host-secret"}
            assert typed_in.seen == []
            assert "pushed **alice/pool@" in alice.predict("alice/pool", False, "", api_name="/push")
        finally:
            app.stop()
