"""`salon pool push` / `pull` through the real huggingface_hub client against the fake Hub in
tests/hubserver.py (127.0.0.1, xet off). The client runs in subprocesses, because
huggingface_hub reads HF_ENDPOINT and HF_HUB_DISABLE_XET when it is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hubserver import serve

from salon.pool import Candidate, Pool


@pytest.fixture
def hub():
    with serve() as (url, server):
        yield url, server


def salon(args, url, tmp_path, token="test-token"):
    env = dict(os.environ, HF_ENDPOINT=url, HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
               HF_HUB_DISABLE_TELEMETRY="1")
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("HF_TOKEN", None)
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "salon.apps.cli", "pool", *args], capture_output=True,
                          text=True, env=env)


def _json(proc) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_push_twice_then_pull_the_older_pinned_revision(hub, tmp_path, make_png):
    url, server = hub
    pool_dir = str(tmp_path / "pool")
    with Pool.open(pool_dir, create=True) as pool:
        cs = [Candidate(code=f"p{i}", png=make_png(i), ok=True, subject="koi", model="m:a") for i in range(4)]
        pool.add_candidates(cs)
        pool.label(cs[0].id, "love", "ana")
        pool.label(cs[1].id, "okay", "ana")
        pool.label(cs[2].id, "nope", "ana")
    first = _json(salon(["push", "me/paintings", "--pool", pool_dir, "--json"], url, tmp_path))
    assert len(first["revision"]) == 40 and first["labelled"] == 3
    with Pool.open(pool_dir, create=True) as pool:
        pool.label(cs[1].id, "love", "ana")  # okay -> love
        pool.label(cs[3].id, "love", "ana")
        pool.add_pair_choice(cs[0].id, cs[1].id, "tie", "ana")
    puts_before = sum(m == "PUT" for m, _ in server.requests)
    second = _json(salon(["push", "me/paintings", "--pool", pool_dir, "-m", "second release", "--json"],
                         url, tmp_path))
    assert second["revision"] != first["revision"]
    repo = server.repos[("dataset", "me/paintings")]
    head = repo.commits[repo.branches["main"]]
    assert head.oid == second["revision"] and head.message == "second release"
    assert sorted(head.files) == [".gitattributes", "README.md", "candidates/train-00000-of-00001.parquet",
                                  "data/train-00000-of-00001.parquet", "pairs/train-00000-of-00001.parquet"]
    assert sum(m == "PUT" for m, _ in server.requests) - puts_before == 3  # changed shards only

    old = _json(salon(["pull", "me/paintings", "--revision", first["revision"][:10], "--to",
                       str(tmp_path / "refs"), "--json"], url, tmp_path))
    assert old["revision"] == first["revision"] and old["counts"] == {"love": 1, "okay": 1, "nope": 1}
    manifest = json.loads((tmp_path / "refs" / "manifest.json").read_text())
    assert (manifest["repo_id"], manifest["revision"]) == ("me/paintings", first["revision"])
    tiers = {r["id"]: r["tier"] for r in manifest["references"]}
    assert tiers == {cs[0].id: "love", cs[1].id: "okay", cs[2].id: "nope"}
    with Pool.open(pool_dir, create=True) as pool:
        for r in manifest["references"]:
            assert r["path"] == f"refs/{r['tier']}/{r['id']}.png"
            assert (tmp_path / "refs" / r["path"]).read_bytes() == pool.image_path(r["id"]).read_bytes()
        assert [(r.repo_id, r.revision) for r in pool.releases()] == [
            ("me/paintings", first["revision"]), ("me/paintings", second["revision"])]
    assert "# salon painting pool" in (tmp_path / "refs" / "README.md").read_text()  # the release's card

    new = _json(salon(["pull", "me/paintings", "--to", str(tmp_path / "refs"), "--json"], url, tmp_path))
    assert new["revision"] == second["revision"] and new["counts"] == {"love": 3, "nope": 1}
    from salon.judges.references import load_references

    refs = load_references(tmp_path / "refs")  # replaced whole: nothing of the old release left
    assert refs.release == f"me/paintings@{second['revision']}"
    assert sorted(p.name for p in (tmp_path / "refs" / "refs" / "okay").iterdir()) == []
    assert {r.id for r in refs.references} == {cs[0].id, cs[1].id, cs[3].id}  # love only; nope is no reference
    assert refs.tiers() == {"love": 3}

    for method, part in [("POST", "/api/repos/create"), ("POST", "/preupload/"), ("POST", "/info/lfs/objects/batch"),
                         ("PUT", "/lfs-upload/"), ("POST", "/api/validate-yaml"), ("POST", "/commit/"),
                         ("GET", "/revision/"), ("GET", "/tree/"), ("GET", "/resolve/"), ("HEAD", "/resolve/")]:
        assert any(m == method and part in p for m, p in server.requests), (method, part)


def test_private_repo_and_plain_output(hub, tmp_path, make_png):
    url, server = hub
    pool_dir = str(tmp_path / "pool")
    with Pool.open(pool_dir, create=True) as pool:
        c = Candidate(code="x", png=make_png(1), ok=True)
        pool.add_candidate(c)
        pool.label(c.id, "love", "ana")
    proc = salon(["push", "me/secret", "--private", "--pool", pool_dir], url, tmp_path)
    assert proc.returncode == 0, proc.stderr
    revision = proc.stdout.strip().splitlines()[-1]
    assert server.repos[("dataset", "me/secret")].private
    assert server.repos[("dataset", "me/secret")].branches["main"] == revision


def test_hub_errors_say_what_to_do(hub, tmp_path, make_png):
    url, _ = hub
    pool_dir = str(tmp_path / "pool")
    with Pool.open(pool_dir, create=True) as pool:
        c = Candidate(code="x", png=make_png(1), ok=True)
        pool.add_candidate(c)
        pool.label(c.id, "love", "ana")
    proc = salon(["push", "me/x", "--pool", pool_dir], url, tmp_path, token=None)
    assert proc.returncode == 2 and "HF_TOKEN" in proc.stderr
    proc = salon(["push", "not-a-repo-id", "--pool", pool_dir], url, tmp_path)
    assert proc.returncode == 2 and "must be namespace/name" in proc.stderr
    proc = salon(["pull", "me/missing", "--to", str(tmp_path / "r")], url, tmp_path)
    assert proc.returncode == 2 and "check the repo id" in proc.stderr
    assert _json(salon(["push", "me/x", "--pool", pool_dir, "--json"], url, tmp_path))["labelled"] == 1
    proc = salon(["pull", "me/x", "--revision", "f" * 40, "--to", str(tmp_path / "r")], url, tmp_path)
    assert proc.returncode == 2 and "check the repo id and revision" in proc.stderr
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "mine.txt").write_text("keep")
    proc = salon(["pull", "me/x", "--to", str(tmp_path / "r")], url, tmp_path)
    assert proc.returncode == 2 and "holds no references" in proc.stderr
    assert (tmp_path / "r" / "mine.txt").read_text() == "keep"
    with Pool.open(pool_dir, create=True) as pool:
        assert len(pool.releases()) == 1  # failed pushes record nothing


def test_a_push_cut_off_at_its_commit_resumes_without_uploading_again(hub, tmp_path, make_png):
    url, server = hub
    pool_dir = str(tmp_path / "pool")
    with Pool.open(pool_dir, create=True) as pool:
        cs = [Candidate(code=f"p{i}", png=make_png(i), ok=True, subject="koi") for i in range(3)]
        pool.add_candidates(cs)
        for c in cs:
            pool.label(c.id, "love", "ana")
    server.fail_commits = 1
    proc = salon(["push", "me/resume", "--pool", pool_dir], url, tmp_path)
    assert proc.returncode == 2 and "run the same command again (it resumes)" in proc.stderr
    repo = server.repos[("dataset", "me/resume")]
    assert not any(p.startswith("data/") for p in repo.commits[repo.branches["main"]].files)
    arrived = sum(m == "PUT" for m, _ in server.requests)
    assert arrived >= 2  # the default and candidates shards reached storage before the commit failed
    again = _json(salon(["push", "me/resume", "--pool", pool_dir, "--json"], url, tmp_path))
    assert sum(m == "PUT" for m, _ in server.requests) == arrived  # the export is the same bytes: nothing re-sent
    files = repo.commits[again["revision"]].files
    assert {p.split("/")[0] for p in files} >= {"data", "candidates", "README.md"}
    with Pool.open(pool_dir, create=True) as pool:
        assert [r.revision for r in pool.releases()] == [again["revision"]]
