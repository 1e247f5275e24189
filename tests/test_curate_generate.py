"""Generation runs end to end: real backends (loopback server, tiny transformers models), the
real render sandbox (one browser), the real pool. Bad backends, a killed and resumed run,
guided refinement rounds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from curate_openai_server import ChatServer  # noqa: E402

from salon.curate.backends import BackendConfig  # noqa: E402
from salon.curate.generate import GenerateConfig, generate_async  # noqa: E402
from salon.curate.prompts import PROMPT_VERSION  # noqa: E402
from salon.pool.errors import ConfigError  # noqa: E402
from salon.pool.store import Pool  # noqa: E402

EXAMPLES = Path(__file__).parents[1] / "curate" / "examples"
PETALS = (EXAMPLES / "hibiscus_02_five_petals.js").read_text()
LAYERED = (EXAMPLES / "hibiscus_03_layered.js").read_text()
SUBJECT = "peach hibiscus"


@pytest.fixture(scope="module")
async def renderer():
    from salon.curate.sandbox.render import RenderConfig, Renderer

    async with Renderer(RenderConfig(browsers=1)) as r:
        yield r


def _config(tmp_path, models, server=None, **kw) -> GenerateConfig:
    backend = BackendConfig(base_url=server.base_url if server else None, retries=1,
                            backoff_s=0, timeout_s=5.0, max_reply_chars=100_000)
    return GenerateConfig(subject=SUBJECT, models=models, pool=str(tmp_path / "pool"),
                          backend=backend, progress=False, **({"n": 2} | kw))


async def test_bad_backends_are_counted_and_nothing_is_lost(tmp_path, renderer):
    bad = ["empty", "garbage", "huge", "error500", "slow", "malformed", "auth", "flaky"]
    with ChatServer([PETALS], slow_s=20.0) as server:  # well past the 5 s timeout
        report = await generate_async(
            _config(tmp_path, [f"openai:{m}" for m in bad], server), renderer)
    counts = {m.split(":")[1]: c for m, c in report.counts.items()}
    for model in ("empty", "garbage", "huge"):  # answered, but no sketch in the answer
        assert (counts[model].rejected, counts[model].failed) == (2, 0), model
    for model, reason in (("error500", "HTTP 500"), ("slow", "timed out"),
                          ("malformed", "malformed reply")):
        assert (counts[model].failed, counts[model].rejected, counts[model].ok) == (2, 0, 0)
        assert reason in next(iter(counts[model].errors)), model
    assert counts["auth"].stopped and "OPENAI_API_KEY" in counts["auth"].stopped
    assert counts["flaky"].ok + counts["flaky"].rejected == 2 and counts["flaky"].failed == 0
    with Pool.open(tmp_path / "pool", create=True) as pool:
        stored = pool.candidates(subject=SUBJECT)
    by_model = {}
    for c in stored:
        by_model.setdefault(c.model.split(":")[1], []).append(c)
    assert {m: len(cs) for m, cs in by_model.items()} == {"empty": 2, "garbage": 2, "huge": 2,
                                                         "flaky": 2}
    assert report.stored == 8
    for c in by_model["empty"] + by_model["garbage"] + by_model["huge"]:
        assert c.ok is False and c.violations == ["no_sketch"] and c.code == ""
        assert c.prompt_version == PROMPT_VERSION and c.round == 0
    assert all(len(c.reply) == 100_000 and c.sampling["reply_truncated"] for c in by_model["huge"])
    assert all(len(c.reply) > 0 for c in by_model["garbage"])
    flaky = by_model["flaky"]
    assert {c.sampling["temperature"] for c in flaky} == {0.6, 0.9} and {c.seed for c in flaky} == {0, 1}
    assert all(c.code.strip() == PETALS.strip() and c.ok is not None for c in flaky)


async def test_hf_model_writes_garbage_that_counts_as_rejects(tmp_path, renderer):
    from salon.models.tiny import build_lm

    folder = build_lm(tmp_path / "lm", "qwen2")
    config = _config(tmp_path, [f"hf:{folder}"], max_tokens=32)
    config.backend.timeout_s = 60
    report = await generate_async(config, renderer)
    counts = report.counts[f"hf:{folder}"]
    assert (counts.ok + counts.rejected, counts.failed) == (2, 0)
    with Pool.open(tmp_path / "pool", create=True) as pool:
        assert len(pool.candidates(model=f"hf:{folder}")) == 2


def _stored(pool_dir: Path) -> int:
    if not (pool_dir / "pool.db").exists():
        return 0
    with Pool.open(pool_dir, create=True) as pool:
        return sum(1 for c in pool.candidates(subject=SUBJECT) if c.ok is not None)


async def test_killed_run_resumes_up_to_n(tmp_path, renderer):
    pool_dir = tmp_path / "pool"
    with ChatServer([PETALS, LAYERED]) as server:
        server.hang_after = 2  # two replies, then the model goes quiet: the run is mid-way
        cmd = [sys.executable, "-m", "salon.apps.cli", "curate", "generate", "--subject", SUBJECT,
               "--model", "openai:examples", "-n", "4", "--base-url", server.base_url,
               "--pool", str(pool_dir), "--concurrency", "1", "--browsers", "1", "--json"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            deadline = time.monotonic() + 240
            while _stored(pool_dir) < 2 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.5)
            assert _stored(pool_dir) == 2, proc.stderr.read().decode()[-2000:] if proc.poll() else ""
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # the run and its browsers, mid-call
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        server.hang_after = None
        report = await generate_async(
            _config(tmp_path, ["openai:examples"], server, n=4), renderer)
    counts = report.counts["openai:examples"]
    assert counts.ok + counts.rejected == 2 and counts.failed == 0 and counts.duplicate == 0
    with Pool.open(pool_dir, create=True) as pool:
        stored = pool.candidates(subject=SUBJECT)
        assert len(stored) == 4 and sorted(c.seed for c in stored) == [0, 1, 2, 3]
        assert pool.check() == []
    again = await generate_async(_config(tmp_path, ["openai:examples"], server, n=4), renderer)
    assert again.stored == 0  # a rerun at N does nothing


async def test_guided_refinement_rounds(tmp_path, renderer):
    from salon.models.tiny import build_vl
    from PIL import Image

    critic = build_vl(tmp_path / "vl", arch="qwen2_5_vl")
    guides = tmp_path / "pool" / "guides" / "peach-hibiscus"
    guides.mkdir(parents=True)
    Image.new("RGB", (64, 48), (240, 160, 120)).save(guides / "510004.jpg")
    (guides / "index.json").write_text(json.dumps([{
        "photo_id": 510004, "observation_id": 9100003,
        "observation_url": "https://www.inaturalist.org/observations/9100003",
        "photo_url": "https://inaturalist-open-data.s3.amazonaws.com/photos/510004/large.jpg",
        "license": "CC0", "attribution": "(c) kaimana, no rights reserved (CC0)",
        "file": "guides/peach-hibiscus/510004.jpg", "subject": SUBJECT, "taxon": "53713"}]))
    with ChatServer([PETALS, LAYERED]) as server:
        config = _config(tmp_path, ["openai:examples"], server, n=1, guides=True, rounds=1,
                         critic=f"hf:{critic}")
        config.backend.timeout_s = 60
        report = await generate_async(config, renderer)
        requests = list(server.requests)
    assert report.counts["openai:examples"].failed == 0, report.as_dict()
    with Pool.open(tmp_path / "pool", create=True) as pool:
        stored = sorted(pool.candidates(subject=SUBJECT), key=lambda c: c.round)
    assert [c.round for c in stored] == [0, 1]
    parent, child = stored
    assert parent.ok, parent.violations
    assert child.parent_id == parent.id and child.guide.id == parent.guide.id == "510004"
    assert child.guide.attribution == "(c) kaimana, no rights reserved (CC0)"
    assert "A teacher looked at the painting" in child.prompt
    painted, revised = requests
    assert painted["messages"][1]["content"][0]["image_url"]["url"].startswith("data:image/jpeg")
    assert revised["messages"][2] == {"role": "assistant",
                                      "content": f"```javascript\n{PETALS.strip()}\n```"}


def test_generate_config_reports_every_problem(tmp_path):
    with pytest.raises(ConfigError) as e:
        GenerateConfig(subject=SUBJECT, models=["gpt-4", "openai:a", "openai:a"], n=0,
                       pool=str(tmp_path), rounds=-1, temperatures=(3.0,))
    assert len(e.value.problems) == 5


async def test_guides_are_checked_before_anything_runs(tmp_path):
    with pytest.raises(ConfigError, match="salon curate guides"):
        await generate_async(_config(tmp_path, ["openai:x"], guides=True))
