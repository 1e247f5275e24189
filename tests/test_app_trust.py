"""The curation app's trust boundary, in process (FastAPI's TestClient, no browser).

Who may listen where, who may spend the host's credentials, what the file routes serve, and
what a labeler sees of the others' tiers before labelling. The same boundary through a real
server, gradio_client and Chromium is in test_app_browser.py.

    .venv/bin/python -m pytest -q tests/test_app_trust.py
"""

from __future__ import annotations

import pytest

from salon.apps.app import AppConfig
from salon.apps.cli import main
from salon.pool.errors import ConfigError


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "lab.example.org"])
def test_a_network_host_needs_a_login_or_the_flag_that_names_the_risk(host, tmp_path, capsys):
    with pytest.raises(ConfigError, match="--insecure-no-auth"):
        AppConfig(host=host)
    AppConfig(host=host, auth=[("alice", "pw")])
    AppConfig(host=host, insecure_no_auth=True)
    assert main(["app", "--pool", str(tmp_path / "pool"), "--host", host]) == 2
    err = capsys.readouterr().err
    assert "listens on the network with no login" in err and "--auth USER:PASS" in err
    assert not (tmp_path / "pool").exists()  # refused before anything was opened


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_needs_no_login(host):
    AppConfig(host=host)


def test_who_may_spend_the_hosts_credentials(monkeypatch):
    assert AppConfig(user="ann").admin_names == {"ann"}  # started it, on loopback
    assert AppConfig(user="ann", host="0.0.0.0", insecure_no_auth=True).admin_names == set()
    logins = [("alice", "pw"), ("bob", "pw")]
    assert AppConfig(auth=logins).admin_names == set()
    assert AppConfig(auth=logins, admins=["bob"]).admin_names == {"bob"}
    with pytest.raises(ConfigError) as e:
        AppConfig(user="ann", admins=["ann"])
    assert "--admin names logins: give --auth too" in str(e.value)
    with pytest.raises(ConfigError, match="'carol' is not one of the --auth logins"):
        AppConfig(auth=logins, admins=["carol"])


def test_generation_may_use_only_the_base_urls_configured_at_start(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert AppConfig().generate_urls == [""]  # the openai backend's own default
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert AppConfig(base_urls=["http://gpu:8000/v1"]).generate_urls == [
        "http://gpu:8000/v1", "http://127.0.0.1:9/v1"]
    with pytest.raises(ConfigError, match="http:// or https://"):
        AppConfig(base_urls=["gpu:8000"])


def test_gradio_file_routes_serve_images_but_never_the_sqlite_files(tmp_path, make_png):
    from fastapi.testclient import TestClient
    from salon.apps.app import build
    from salon.pool import Candidate, Pool

    painting = Candidate(code="// a painting", ok=True, png=make_png(1))
    with Pool.open(tmp_path / "pool", create=True) as pool:
        pool.add_candidate(painting)
        pool.label(painting.id, "love", "bob")
        image = pool.image_path(painting.id).resolve()
        with TestClient(build(AppConfig(user="ann"), pool)) as api:
            db = pool.db_path.resolve()
            secrets = [db, db.with_name("pool.db-wal"), db.with_name("pool.db-shm")]
            assert all(p.exists() for p in secrets)  # the app holds the pool open: WAL mode
            for path in [*map(str, secrets), f"{image.parent}/../../pool.db",
                         f"{image.parents[1]}/%2E%2E/pool.db", str(db).replace("/", "//")]:
                for route in ("/gradio_api/file=", "/file=", "/gradio_api/file/", "/file/"):
                    r = api.get(route + path)
                    assert r.status_code in (403, 404), (route, path, r.status_code)
                    assert b"SQLite format" not in r.content
            # The images themselves still load, for the grid's thumbnails.
            r = api.get(f"/gradio_api/file={image}")
            assert r.status_code == 200 and r.content == image.read_bytes()


def test_others_tiers_reach_a_labeler_only_after_her_own_label(tmp_path, make_png):
    from fastapi.testclient import TestClient
    from salon.apps.app import build
    from salon.pool import Candidate, Pool

    a, b = (Candidate(code=f"// {i}", ok=True, png=make_png(i)) for i in range(2))
    with Pool.open(tmp_path / "pool", create=True) as pool:
        pool.add_candidates([a, b])
        pool.label(a.id, "love", "bob")
        pool.label(b.id, "okay", "carol")
        with TestClient(build(AppConfig(user="ann"), pool)) as api:
            items = api.post("/salon/api/items", json={"ids": [a.id, b.id]}).json()["items"]
            assert [(i["labels"], i["consensus"], i["mine"]) for i in items] == [({}, None, None)] * 2
            pair = api.get("/salon/api/pair").json()
            assert "bob" not in str(pair) and "carol" not in str(pair)
            got = api.post("/salon/api/label", json={"id": a.id, "tier": "nope"}).json()
            assert got["labels"] == {"bob": "love", "ann": "nope"} and got["consensus"] is not None
            items = api.post("/salon/api/items", json={"ids": [a.id, b.id]}).json()["items"]
            assert items[0]["labels"] == {"bob": "love", "ann": "nope"}
            assert (items[1]["labels"], items[1]["consensus"]) == ({}, None)  # still unlabelled by ann
            undone = api.post("/salon/api/label", json={"id": a.id, "tier": None}).json()
            assert (undone["labels"], undone["consensus"]) == ({}, None)
