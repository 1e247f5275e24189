"""The app's blind checkpoint comparisons: two checkpoints' paintings of one prompt and seed.

    salon app --run runs/x [--run runs/y]      # the Compare view gets a "checkpoints of x" mode

The paintings are `salon eval`'s (RUN_DIR/eval/). A pair is a random (prompt, seed) with a
painting from at least two checkpoints, two of those checkpoints at random, in random left/right
order. The page gets opaque sample ids and the subject, never a step or a checkpoint's name; the
server looks the provenance up when the choice comes back and stores it in RUN_DIR/reviews.db
(salon.train.eval.reviews), which `salon eval` turns into a win rate per checkpoint. Keys are the
Compare view's: left arrow or a, right arrow or d, t or down arrow for a tie, n for another pair.

    GET  /salon/api/runs                            {runs: [{name, checkpoints, suspects}]}
    GET  /salon/api/ckpt/pair?run=NAME              {left: {id, image, subject}, right: {...}}
    POST /salon/api/ckpt/pair   {run, left, right, winner}       {seq, at}
    GET  /salon/ckpt/img/{run}/{sample_id}          the painting (PNG)

Named Gradio endpoints (only with --run): /checkpoint_pair (run) -> {left, right, subject},
/checkpoint_choice (run, left_id, right_id, winner) -> {seq, winner, labeler},
/checkpoint_choices (run) -> every choice with its provenance (the export).
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import gradio as gr
from fastapi import APIRouter, Body, Depends, HTTPException
from fastapi.responses import Response

from salon.pool.errors import PoolError
from salon.train.eval.dataset import EvalDataset
from salon.train.eval.reviews import Reviews


class RunReview:
    """One run the app reviews: its eval samples by id (no images held) and its reviews.db."""

    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir)
        self.name = self.dir.resolve().name
        self.store = EvalDataset(self.dir)
        self.reviews = Reviews.open(self.dir)
        self._lock = threading.Lock()
        self._key, self._samples = None, {}

    def samples(self) -> dict[str, dict]:
        """{sample_id: provenance} of the painted samples, reread when a shard changes."""
        shards = sorted(self.store.data.glob("step-*.parquet"))
        key = [(p.name, p.stat().st_mtime_ns) for p in shards]
        with self._lock:
            if key != self._key:
                frame = self.store.frame(images=False) if shards else None
                painted = [] if frame is None else frame[frame["paint_fraction"].notna()].itertuples()
                self._samples = {r.sample_id: {"sample_id": r.sample_id, "step": int(r.step), "prompt": r.prompt,
                                               "subject": r.subject, "seed": int(r.seed)} for r in painted}
                self._key = key
            return self._samples

    def pair(self) -> tuple[dict, dict]:
        by_key: dict[tuple, dict[int, dict]] = {}
        for s in self.samples().values():
            by_key.setdefault((s["prompt"], s["seed"]), {})[s["step"]] = s
        open_ = [steps for steps in by_key.values() if len(steps) >= 2]
        if not open_:
            raise PoolError(f"{self.dir}: no prompt and seed painted by two checkpoints yet: run "
                            f"`salon eval {self.dir}` first")
        steps = random.choice(open_)
        left, right = random.sample(sorted(steps), 2)  # random order: position bias cancels
        return steps[left], steps[right]

    def choose(self, left_id: str, right_id: str, winner: str, by: str):
        samples = self.samples()
        for sid in (left_id, right_id):
            if sid not in samples:
                raise PoolError(f"no painted eval sample {sid!r} in {self.dir}/eval: ask for a new pair")
        return self.reviews.add_choice(samples[left_id], samples[right_id], winner, by, run=self.name)

    def image(self, sid: str) -> bytes | None:
        import pyarrow.parquet as pq

        s = self.samples().get(sid)
        if s is None:
            return None
        table = pq.read_table(self.store.shard(s["step"]), columns=["image"], filters=[("sample_id", "=", sid)])
        cell = table.column("image")[0].as_py() if table.num_rows else None
        return cell.get("bytes") if cell else None


def open_runs(run_dirs: list) -> dict[str, RunReview]:
    runs = [RunReview(d) for d in run_dirs]
    return {r.name: r for r in runs}


def shown(run: RunReview, s: dict) -> dict:
    """What the page may see of a sample: no step, no checkpoint name."""
    return {"id": s["sample_id"], "subject": s["subject"], "image": f"/salon/ckpt/img/{run.name}/{s['sample_id']}"}


def checkpoint_router(runs: dict[str, RunReview], user_of) -> APIRouter:
    from salon.apps.app_api import login_required
    from salon.train.eval.suspects import load_suspects

    api = APIRouter()
    me = login_required(user_of)

    def run_of(name: str) -> RunReview:
        if name not in runs:
            raise HTTPException(404, f"no run {name!r} in this app: start it with --run RUN_DIR")
        return runs[name]

    @api.get("/salon/api/runs")
    def list_runs(user: str = Depends(me)):
        return {"runs": [{"name": r.name, "checkpoints": len({s["step"] for s in r.samples().values()}),
                          "suspects": len(load_suspects(r.dir))} for r in runs.values()]}

    @api.get("/salon/api/ckpt/pair")
    def pair(run: str, user: str = Depends(me)):
        r = run_of(run)
        try:
            left, right = r.pair()
        except PoolError as e:
            raise HTTPException(404, str(e)) from None
        return {"left": shown(r, left), "right": shown(r, right)}

    @api.post("/salon/api/ckpt/pair")
    def choose(body: dict = Body(...), user: str = Depends(me)):
        try:
            row = run_of(str(body.get("run"))).choose(body.get("left"), body.get("right"), body.get("winner"), user)
        except PoolError as e:
            raise HTTPException(400, str(e)) from None
        return {"seq": row.seq, "at": row.at}

    @api.get("/salon/ckpt/img/{run}/{sid}")
    def image(run: str, sid: str, user: str = Depends(me)):
        png = run_of(run).image(sid)
        if png is None:
            raise HTTPException(404, "no painting for this sample")
        # not immutable: `salon eval` without --resume may paint the same sample again
        return Response(png, media_type="image/png", headers={"Cache-Control": "no-cache"})

    return api


def run_named(runs: dict[str, RunReview], name: str) -> RunReview:
    """The run a Gradio endpoint names, or a gr.Error listing the app's runs."""
    if name not in runs:
        raise gr.Error(f"no run {name!r} in this app; runs: {', '.join(runs)}")
    return runs[name]


def checkpoint_endpoints(state, runs: dict[str, RunReview]) -> None:
    """The same actions as named Gradio endpoints, for scripts and gradio_client."""
    from salon.apps.app_label import store_errors

    def run_of(name: str) -> RunReview:
        return run_named(runs, name)

    def checkpoint_pair(run: str) -> dict:
        """Two checkpoints' paintings of one prompt and seed, in random order; checkpoint names hidden."""
        with store_errors():
            left, right = run_of(run).pair()
            return {"left": left["sample_id"], "right": right["sample_id"], "subject": left["subject"]}

    def checkpoint_choice(run: str, left_id: str, right_id: str, winner: str, request: gr.Request) -> dict:
        """Record which of two checkpoints' paintings (as shown: left, right) the user prefers, or tie."""
        with store_errors():
            row = run_of(run).choose(left_id, right_id, winner, state.user(request))
            return {"seq": row.seq, "winner": row.winner, "labeler": row.labeler}

    def checkpoint_choices(run: str) -> list[dict]:
        """Every blind checkpoint choice of a run with its provenance (run, steps, prompt, seed)."""
        with store_errors():
            return [c.to_dict() for c in run_of(run).reviews.choices()]

    for fn in (checkpoint_pair, checkpoint_choice, checkpoint_choices):
        gr.api(fn, api_name=fn.__name__)
