"""`salon train` rendering on a real local Ray cluster (render.backend=ray; no mocks).

1. The reward adapter built as the recipe builds it (build_render_backend, the judge and references
   of smoke.yaml) on two actors: one actor's process is SIGKILLed while it holds samples. Exactly
   those samples come out None (counted in salon/none and salon/render_unavailable), never 0; the
   others are scored; the next call renders on the replacement actor.
2. A one-step `salon train` smoke run with render.backend=ray, which starts and shuts down its own
   local cluster.

A kill inside a whole train run would have to race TRL's generation for the moment a render is in
flight; the adapter call gives that moment deterministically. About a minute on two cores.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from salon.apps.cli import main  # noqa: E402
from salon.train.config import load_config  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SMOKE = str(ROOT / "train" / "configs" / "smoke.yaml")
HEAVY = (ROOT / "curate" / "examples" / "jellyfish_02_drifting.js").read_text()  # several seconds a render
LIGHT = (ROOT / "curate" / "examples" / "jellyfish_01_bell.js").read_text()
# two 1-CPU actors with one browser each: what two cores hold
RAY = ["render.backend=ray", "render.actors=2", "render.cpus_per_actor=1", "render.browsers=1", "render.timeout_s=60"]


@pytest.fixture(autouse=True)
def no_cluster_left():
    import ray

    yield
    if ray.is_initialized():  # a failed test must not leave its cluster to the next one
        ray.shutdown()
        pytest.fail("a Ray cluster was left running")


def distinct(code: str, n: int = 4) -> list[str]:
    """n replies with the same painting as n sketches (one sketch with one seed is one render a step)."""
    return [reply(f"{code}\n// sample {i}\n") for i in range(n)]


def reply(code: str) -> str:
    return f"Here is the painting.\n```javascript\n{code}\n```"


def test_a_killed_actor_makes_its_samples_none_never_zero(tmp_path):
    from salon.train.recipe import build_judge, build_references, build_render_backend
    from salon.train.record.recorder import Recorder
    from salon.train.reward import RewardAdapter, submit_each
    from salon.train.scoring import Scorer

    cfg = load_config(SMOKE, RAY + [f"output_dir={tmp_path}"])
    render = build_render_backend(cfg)  # starts the local cluster and both actors' browsers
    try:
        pids = render.actor_pids()
        assert len(pids) == 2 and all(pids)
        scorer = Scorer(cfg.reward, judge=build_judge(cfg, tmp_path), references=build_references(cfg, tmp_path),
                        k=cfg.judge.k, mix=cfg.judge.mix, seed=cfg.seed)
        submitted = []
        step = submit_each(render)

        def seen(items):  # the recipe's render step, remembering which actor took each sample
            futures = step(items)
            submitted.extend(futures)
            return futures

        adapter = RewardAdapter(scorer, render=seen, recorder=Recorder(scorer.components), run="ray-kill")
        prompts = [[{"role": "user", "content": f"paint {s}"}] for s in ("koi", "koi", "peony", "peony")]
        metrics: dict[str, float] = {}
        rewards: list = []
        call = threading.Thread(target=lambda: rewards.extend(adapter(
            prompts=prompts, completions=distinct(HEAVY), row=[0, 0, 1, 1], log_metric=metrics.__setitem__)))
        call.start()
        deadline = time.monotonic() + 60
        while len(submitted) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = submitted[0].salon_actor
        time.sleep(1.0)  # its renders are under way
        os.kill(pids[victim], signal.SIGKILL)
        call.join(300)
        assert not call.is_alive() and len(rewards) == 4

        lost = [f.salon_actor == victim for f in submitted]
        assert lost.count(True) == 2  # least-loaded dispatch: two samples each
        for gone, fut, reward in zip(lost, submitted, rewards):
            result = fut.result()
            if gone:
                assert reward is None and result.unavailable and result.violations == []
            else:
                assert reward is not None and reward > 0 and result.ok
        assert metrics["salon/none"] == 2 and metrics["salon/render_unavailable"] == 2

        # the run goes on: the next step renders everything, on a fresh actor in the dead one's slot
        submitted.clear()
        later = adapter(prompts=prompts, completions=distinct(LIGHT), row=[0, 0, 1, 1])
        assert all(r is not None and r > 0 for r in later)
        assert render.replaced == 1 and {f.salon_actor for f in submitted} == {0, 1}
    finally:
        render.close()


def test_salon_train_renders_on_ray(tmp_path):
    import ray

    from salon.train.record.archive import load_rollouts

    out = tmp_path / "run"
    session = Path("/tmp/ray/session_latest")  # each ray.init starting a cluster links a new session here
    before = session.resolve() if session.exists() else None
    sets = [a for s in RAY[:1] + ["render.actors=1", "render.cpus_per_actor=1", "render.browsers=1"]
            for a in ("--set", s)]
    assert main(["train", SMOKE, "--output-dir", str(out), "--max-steps", "1", *sets,
                 "--set", "smoke.example_files=[still_02_teacup.js]"]) == 0
    assert session.resolve() != before  # the run rendered on a cluster of its own...
    assert not ray.is_initialized()  # ...and shut it down
    df = load_rollouts(out, images=False)
    assert len(df) == 4 and not df["render_unavailable"].any()
    rendered = df[df["gate_passed"]]
    assert len(rendered) == 2 and rendered["reward"].notna().all() and (rendered["render_ms"] > 0).all()
