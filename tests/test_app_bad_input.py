"""The curation app's JSON API and command line on bad input, in process (no browser).

An empty pool, a painting whose file went missing, a candidate whose render failed, labels the
store refuses, a pool that cannot be opened, contradictory or malformed flags; and, in a real
process, a port another server holds.

    .venv/bin/python -m pytest -q tests/test_app_bad_input.py
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from salon.apps.app import AppConfig, build
from salon.apps import cli
from salon.apps.cli import main
from salon.pool import Candidate, Pool
from salon.pool.errors import ConfigError


@pytest.fixture
def client():
    from fastapi.testclient import TestClient

    def make(pool_dir, **config):
        app = build(AppConfig(pool=pool_dir, create_pool=True, **({"user": "ann"} | config)))
        return TestClient(app)

    return make


def test_empty_pool(tmp_path, client):
    with client(tmp_path / "empty") as api:
        assert api.get("/salon/api/me").json() == {"user": "ann", "models": [], "subjects": []}
        assert api.post("/salon/api/queue", json={}).json() == {"ids": [], "labelled": 0, "total": 0}
        r = api.get("/salon/api/pair")
        assert r.status_code == 404 and "at least two" in r.json()["detail"]
        r = api.post("/salon/api/label", json={"id": "ab" * 32, "tier": "love"})
        assert r.status_code == 400 and "no candidate" in r.json()["detail"]
        assert api.get("/").status_code == 200


def test_missing_image_no_render_and_refused_labels(tmp_path, client, make_png):
    good, gone = (Candidate(code=f"// {i}", ok=True, png=make_png(i)) for i in range(2))
    failed = Candidate(code="// render unavailable", ok=None)
    with Pool.open(tmp_path / "pool", create=True) as pool:
        pool.add_candidates([good, gone, failed])
        pool.image_path(gone.id).unlink()
    with client(tmp_path / "pool") as api:
        queue = api.post("/salon/api/queue", json={"rejects": True}).json()["ids"]
        assert queue == [good.id, gone.id, failed.id]
        items = {i["id"]: i for i in api.post("/salon/api/items", json={"ids": queue}).json()["items"]}
        assert items[good.id]["image"].startswith(f"/salon/img/{good.id}")
        assert items[gone.id]["image"] is None and "salon pool check" in items[gone.id]["image_problem"]
        assert items[failed.id]["image"] is None and "render failed" in items[failed.id]["image_problem"]
        assert api.get(items[good.id]["image"]).headers["content-type"] == "image/png"
        for cid in (gone.id, failed.id):
            assert api.get(f"/salon/img/{cid}").status_code == 404
        # Without rejects shown, a candidate without a render is not in the queue.
        assert failed.id not in api.post("/salon/api/queue", json={}).json()["ids"]
        r = api.post("/salon/api/label", json={"id": good.id, "tier": "great"})
        assert r.status_code == 400 and "unknown tier" in r.json()["detail"]
        r = api.post("/salon/api/queue", json={"view": "favourites"})
        assert r.status_code == 400 and "unknown view" in r.json()["detail"]
        r = api.post("/salon/api/label", json={"id": failed.id, "tier": "nope"})
        assert r.status_code == 200 and r.json()["consensus"] == "nope"
    with Pool.open(tmp_path / "pool", create=True) as pool:
        assert pool.current_labels() == {failed.id: {"ann": "nope"}}


def test_api_needs_a_login_when_the_app_has_auth(tmp_path, client):
    with client(tmp_path / "pool", user=None, auth=[("alice", "pw")]) as api:
        assert api.post("/salon/api/label", json={"id": "ab" * 32, "tier": "love"}).status_code == 401
        assert api.post("/login", data={"username": "alice", "password": "nope"}).status_code == 400
        assert api.post("/login", data={"username": "alice", "password": "pw"}).status_code == 200
        # Logged in to Gradio, but no salon session yet: the page asks Gradio for one.
        assert api.get("/salon/api/me").status_code == 401
        api.cookies.set("salon-session", session_token(api))
        assert api.get("/salon/api/me").json()["user"] == "alice"
        api.cookies.set("salon-session", "forged")
        assert api.get("/salon/api/me").status_code == 401


def session_token(api) -> str:
    """What salon.js does on a 401: Gradio's REST call API on the /salon_session endpoint."""
    event = api.post("/gradio_api/call/salon_session", json={"data": []}).json()["event_id"]
    stream = api.get(f"/gradio_api/call/salon_session/{event}").text
    return json.loads(stream.split("event: complete\ndata: ", 1)[1].splitlines()[0])[0]


def test_config_and_flag_errors(tmp_path, capsys):
    with pytest.raises(ConfigError) as e:
        AppConfig(user="ann", auth=[("bob", "pw")], port=70000)
    assert len(e.value.problems) == 2
    assert main(["app", "--pool", str(tmp_path), "--auth", "alice"]) == 2
    assert "USER:PASS" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["app", "--pool", str(blocker / "pool")]) == 2
    assert "no pool at" in capsys.readouterr().err
    assert main(["app", "--pool", str(blocker / "pool"), "--new"]) == 2
    assert "cannot create pool folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: --user and --auth exclude each other
        main(["app", "--user", "ann", "--auth", "bob:pw"])


def test_a_command_module_that_cannot_be_imported_is_an_error(monkeypatch):
    # A renamed or broken cmd_ module must fail loudly, not vanish from `salon --help`.
    monkeypatch.setattr(cli, "COMMANDS", [*cli.COMMANDS, "renamed"])
    with pytest.raises(ModuleNotFoundError, match="salon.apps.cmd_renamed"):
        cli.build_parser()


def test_a_taken_port_is_one_line_that_names_port(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "salon.apps.cli", "app", "--pool", str(tmp_path / "pool"), "--new",
                               "--user", "ann", "--port", str(port)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"salon app: port {port} on 127.0.0.1 is taken (another salon app, or another server): "
                           "choose another with --port N, or --port 0 for any free one\n")
