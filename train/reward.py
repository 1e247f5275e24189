"""The TRL reward adapter: plan, render, score and record completions; one float or None each.

    adapter = RewardAdapter(Scorer(settings, judge=judge, references=refs), render=submit_each(render_pool),
                            recorder=Recorder(scorer.components, archive=archive), run="hibiscus")
    GRPOTrainer(..., reward_funcs=[adapter])         # TRL calls adapter(prompts=..., completions=..., ...)
    adapter(prompts=p, completions=c)                # also callable by hand: list[float | None]

One sample through a call (`__call__` reads in this order):

1. plan (salon.train.rollout.Planner): the sketch is extracted from the reply; its group (the
   completions of one dataset row), position and render seed are fixed;
2. gate and render: the static gate runs at once; sketches that pass go to the render step, all
   of the batch together (or already at generation time: `prefetch`); one sketch with one seed is
   rendered once a step, whichever completions wrote it;
3. score (salon.train.scoring.Scorer): the paintings ready when the judge is free, of any group, each
   against its own group's reference draw, in one call to the judge once they are
   `reward.judge_min_batch` or all the call has left (`_batches_as_ready`): the judge never waits for
   a group's slowest painting while others are ready, and its batches grow while paintings come faster
   than it judges (with `reward.judge_as_rendered: false`, a group once all of it is ready). The
   paintings of the step's later calls that `prefetch` planned (grpo.update_per_group calls come a
   micro-batch at a time) are judged beside this call's, or alone while none of its own is ready, and
   their own calls find them scored: the card judges while it would wait. Gate failure gets the
   configured penalty; an infrastructure failure (render unavailable, an undecodable PNG, a
   weighted scorer without an answer) makes the sample None, never 0;
4. record (salon.train.record.recorder.Recorder): a typed `Rollout` per sample goes to the archive, with
   every component in its own `reward_*` column, and the statistics go to TRL's `log_metric`.

TRL counts a None as 0 when another reward function answered, so this adapter is the only reward
function and decides the whole sample.

The rendering seam is `RenderStep`: a callable that takes [(code, seed)] and returns one
`Future[RenderResult]` each, in order, at once (never raising; an infrastructure failure is
`RenderResult.infra`). `submit_each(x)` makes one from anything with `submit(code, seed)`: the
render worker processes (salon.train.render_workers.RenderPool) or any other render backend.
"""

from __future__ import annotations

import functools
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Protocol, Sequence

from salon.curate.sandbox import gate
from salon.curate.sandbox.render import RenderResult
from salon.train.record.recorder import Recorder
from salon.train.rollout import Planner, Rollout, Sample, completion_text
from salon.train.scoring import Scored, Scorer, prepare


class RenderStep(Protocol):
    def __call__(self, items: Sequence[tuple[str, int]]) -> list[Future]:
        """Start rendering every (code, seed); one Future[RenderResult] each, in order, at once."""
        ...


def submit_each(backend) -> RenderStep:
    """A RenderStep over anything with `submit(code, seed) -> Future[RenderResult]`."""
    return lambda items: [backend.submit(code, seed) for code, seed in items]


@dataclass
class StepPaintings:
    """One step's paintings: renders by (code, seed), each with its preparation, started at generation
    (prefetch) or by a reward call and shared by every completion with that key (one sketch with one seed
    is one painting); the samples `prefetch` planned, and those judged ahead of their own reward call, by
    (prompt, completion, seed): a sample's scores depend on nothing else."""

    renders: dict[tuple[str, int], tuple[RenderResult | Future, Future]] = field(default_factory=dict)
    planned: dict[tuple[str, str, int], Sample] = field(default_factory=dict)
    scored: dict[tuple[str, str, int], Scored] = field(default_factory=dict)


class RewardAdapter:
    """A TRL reward function (see module doc). `__name__` is what TRL logs it as."""

    def __init__(self, scorer: Scorer, *, render: RenderStep, recorder: Recorder | None = None,
                 planner: Planner | None = None, run: str = "run", process: int = 0):
        self.__name__ = "salon_reward"
        self.scorer, self.render, self.run, self.process = scorer, render, run, process
        self.recorder = recorder or Recorder(scorer.components, process=process)
        self.planner = planner or Planner(scorer.seed)
        # per step (this one, and the next ones while grpo.max_staleness 1 or 2 generates them during it): its
        # renders, planned samples and those judged ahead of their own reward call (StepPaintings)
        self._steps: dict[int, StepPaintings] = {}
        self._steps_lock = threading.Lock()
        # each painting is decoded and measured (scoring.prepare) the moment it is rendered, not when a reward
        # call asks for it (decoding and measuring are 15-30 ms a 600x600 PNG on a CPU: a group's 8 would
        # hold the card for a call of one group, grpo.update_per_group's)
        self._preparing = ThreadPoolExecutor(max_workers=2, thread_name_prefix="salon-prepare")
        self.calls = 0
        # called before each judge call, in the thread that called the reward (TRL's trainer thread, whose CUDA stream
        # it may set): the overlapped step's trainer takes the whole card back there once the generation ahead is
        # done (salon.train.engine.overlap.OverlappedRollout.whole_card_if_done)
        self.before_judging: Callable[[], None] | None = None

    @property
    def reward_columns(self) -> list[str]:
        return [f"reward_{c}" for c in self.scorer.components]

    # ---- the TRL reward function ---------------------------------------------------------------
    def __call__(self, prompts, completions, trainer_state=None, log_metric=None, **columns) -> list[float | None]:
        t0 = time.perf_counter()
        step = trainer_state.global_step if trainer_state is not None else self.calls
        self.calls += 1
        samples = self.planner.plan(prompts, [completion_text(c) for c in completions], step,
                                    columns.get("row"), columns.get("subject"))
        mine_now = self._paintings(step, current=True)
        started, prepared = self._start(samples, step)
        rollouts: list[Rollout | None] = [None] * len(samples)
        # judge_s: scoring (the pairwise judge, the image judges, decoding, the records), judge_ahead_s the
        # later calls' paintings' share of it (by count, in the batches that held them); pairwise_judge_s:
        # the pairwise judge's share of judge_s; judge_calls: how many batches judged them (a judge call's
        # fixed cost and its batch size are what judging as rendered trades against the wait)
        timing = {"render_wait_s": 0.0, "judge_s": 0.0, "judge_ahead_s": 0.0, "pairwise_judge_s": 0.0,
                  "judge_calls": 0}
        todo = []
        for s in samples:
            found = mine_now.scored.get(_score_key(s))
            if found is None:
                todo.append(s)
            else:
                rollouts[s.index] = self._rollout(s, _result(started[s.index]), found, step)
        mine = {_score_key(s) for s in samples}
        settings = self.scorer.settings
        for own, ahead, waited in _batches_as_ready([(s, prepared[s.index]) for s in todo],
                                                    functools.partial(self._later, mine_now, mine),
                                                    not settings.judge_as_rendered, settings.judge_min_batch):
            timing["render_wait_s"] += waited
            if self.before_judging is not None:
                self.before_judging()
            tj = time.perf_counter()
            renders = [mine_now.renders[s.code, s.seed] for s in ahead]
            results = [_result(started[s.index]) for s in own] + [_result(r) for r, _ in renders]
            ready = [prepared[s.index].result() for s in own] + [p.result() for _, p in renders]
            scored = self.scorer.score(own + ahead, results, step, ready)
            for s, result, one in zip(own, results, scored):
                rollouts[s.index] = self._rollout(s, result, one, step)
            for s, one in zip(ahead, scored[len(own):]):
                mine_now.scored[_score_key(s)] = one
            spent = time.perf_counter() - tj
            timing["judge_s"] += spent
            timing["judge_ahead_s"] += spent * len(ahead) / (len(own) + len(ahead))
            timing["pairwise_judge_s"] += self.scorer.last_pairwise_s
            timing["judge_calls"] += 1
        timing["reward_s"] = time.perf_counter() - t0
        # the slowest painting's time in its browser and its text check (what a group waits for at least),
        # and the mean (against the reward's time: how busy the browsers were)
        rendered = [_result(x) for x in started]
        for key, ms in (("render", [r.render_ms for r in rendered if r.render_ms]),
                        ("ocr", [r.ocr_ms for r in rendered if r.ocr_ms])):
            timing[f"{key}_max_s"] = max(ms, default=0) / 1000
            timing[f"{key}_mean_s"] = sum(ms) / len(ms) / 1000 if ms else 0.0
        self.recorder.record(rollouts, step, log_metric, timing)
        return [r.reward for r in rollouts]

    def prefetch(self, prompts, completions, step: int, group_size: int | None = None,
                 rows: list[int] | None = None) -> None:
        """Start rendering right after generation (TRL computes log-probs before it asks for
        rewards), after each wave of it, or for the whole step at once (grpo.update_per_group, whose
        reward calls come a micro-batch at a time); the reward calls pick the renders up by (code,
        seed). `group_size` (TRL's num_generations): each run of that many completions is one row's
        group, as TRL lays them out, so the planner groups them as the reward call will (by its `row`
        column); a stand-in planner (salon.train.smoke) picks its sketch by group and position. `rows`: each
        completion's row where they are not the batch's first ones in order (rows that ended early)."""
        if rows is None and group_size is not None:
            rows = [i // group_size for i in range(len(prompts))]
        samples = self.planner.plan(prompts, [completion_text(c) for c in completions], step, rows)
        passing = [s for s in samples if not gate.static_violations(s.code)]
        self._render_all(passing, step)
        # a wave's again after the whole batch: once
        self._paintings(step).planned.update((_score_key(s), s) for s in passing)

    # ---- the steps -----------------------------------------------------------------------------
    def _start(self, samples: list[Sample], step: int) -> tuple[list[RenderResult | Future], list[Future]]:
        """The static gate now; this step's render (prefetched, or started now) of each sketch that
        passes, and its preparation (`prepared_when_rendered`)."""
        started: list[RenderResult | Future | None] = [None] * len(samples)
        prepared: list[Future | None] = [None] * len(samples)
        passing = []
        for i, s in enumerate(samples):
            static = gate.static_violations(s.code)
            if static:
                started[i] = RenderResult(ok=False, violations=static)
                prepared[i] = prepared_when_rendered(started[i], self._preparing)
            else:
                passing.append(i)
        renders = self._render_all([samples[i] for i in passing], step)
        for i in passing:
            started[i], prepared[i] = renders[samples[i].code, samples[i].seed]
        return started, prepared

    def _paintings(self, step: int, current: bool = False) -> StepPaintings:
        """The step's paintings; a reward call (`current`) lets the earlier steps' go: what they did not use
        was their own sketches. A later step's may exist already (generated a step ahead, prefetched)."""
        with self._steps_lock:
            if current:
                for earlier in [k for k in self._steps if k < step]:
                    del self._steps[earlier]
            return self._steps.setdefault(step, StepPaintings())

    def _render_all(self, samples: list[Sample],
                    step: int) -> dict[tuple[str, int], tuple[RenderResult | Future, Future]]:
        """The step's renders and their preparations, with those of `samples` not yet started submitted in
        one batch."""
        renders = self._paintings(step).renders
        todo = [key for key in dict.fromkeys((s.code, s.seed) for s in samples) if key not in renders]
        for key, render in zip(todo, self.render(todo)):
            renders[key] = render, prepared_when_rendered(render, self._preparing)
        return renders

    def _later(self, paintings: StepPaintings, mine: set) -> list[tuple[Sample, Future]]:
        """The step's samples that `prefetch` planned for later calls, not judged yet, with their
        preparations (`mine`: this call's score keys)."""
        return [(s, paintings.renders[s.code, s.seed][1]) for key, s in list(paintings.planned.items())
                if key not in mine and key not in paintings.scored]

    def _rollout(self, s: Sample, res: RenderResult, scored: Scored, step: int) -> Rollout:
        draw, judge = scored.draw, self.scorer.judge
        return Rollout(
            run=self.run, step=step, checkpoint=f"checkpoint-{step}" if step else "base", group=s.group,
            row=s.row, position=s.position, process=self.process, subject=s.subject, prompt=s.prompt,
            completion=s.completion, completion_chars=len(s.completion), code=s.code, seed=s.seed, image=res.png,
            gate_passed=scored.components["gate"] == 1.0, violations=list(res.violations),
            js_errors=list(res.js_errors), render_ms=res.render_ms, render_unavailable=bool(res.unavailable),
            render_gl=res.gl or None,
            paint_fraction=res.paint_fraction, coverage=scored.coverage, reward=scored.total,
            missing=scored.missing, judge_reason=scored.reason, references=[r.id for r in draw.references],
            reference_tiers=[r.tier or "" for r in draw.references], draw_seed=draw.seed,
            pool_release=self.scorer.references.release, judge=judge.name,
            judge_version=getattr(judge, "prompt_version", None), substituted_example=s.substituted_example,
            created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), rewards=scored.components,
            painting=scored.painting, absolute_mu=getattr(scored.absolute, "mu", None),
            absolute_log_sigma=getattr(scored.absolute, "log_sigma", None),
            absolute_reason=getattr(scored.absolute, "reason", None))


def _batches_as_ready(mine: list[tuple[Sample, Future]], later: Callable[[], list[tuple[Sample, Future]]],
                      whole: bool = False, least: int = 1):
    """Yield (this call's samples, later calls' samples, seconds waited) to judge together, each sample
    of `mine` once, as their preparations (`Future`s) are done: what is ready when the judge is free, of
    any group, once it is at least `least` paintings or all this call has left, so the judge never
    waits for a group's slowest painting while others are ready, and its batches grow while paintings
    come faster than it judges. The later ones (`later()`: the step's samples of later calls not judged
    yet) come with them, or alone while none of this call's is ready. With `whole`
    (reward.judge_as_rendered: false), a group only once all of it is ready. The wait is counted from
    the previous batch on, and spent blocked, not polling."""
    pending = list(mine)
    waited = 0.0
    while pending:
        others = later()
        own, ahead = _ready(pending, whole), _ready(others, whole)
        if (own or ahead) and (whole or len(own) + len(ahead) >= least or len(own) == len(pending)):
            taken = {id(s) for s, _ in own}  # by sample: samples of one sketch share its preparation
            pending = [(s, f) for s, f in pending if id(s) not in taken]
            yield [s for s, _ in own], [s for s, _ in ahead], waited
            waited = 0.0
            continue
        tw = time.perf_counter()
        wait([f for _, f in pending + others if not f.done()], return_when=FIRST_COMPLETED)
        waited += time.perf_counter() - tw


def _ready(items: list[tuple[Sample, Future]], whole: bool) -> list[tuple[Sample, Future]]:
    """Those done; with `whole`, only those whose group (among `items`) is all done."""
    done = [(s, f) for s, f in items if f.done()]
    if not whole:
        return done
    open_groups = {s.group for s, f in items if not f.done()}
    return [(s, f) for s, f in done if s.group not in open_groups]


def prepared_when_rendered(x: RenderResult | Future, pool: ThreadPoolExecutor) -> Future:
    """A Future of `scoring.prepare` of the painting's PNG (decoded, and its composition), made in
    `pool` once the render is done; never raising ((None, None) where it could not be made)."""
    if isinstance(x, RenderResult):
        return pool.submit(prepare, x.png)
    out: Future = Future()

    def prepared(done: Future) -> None:
        out.set_result(done.result() if done.exception() is None else (None, None))

    def rendered(render: Future) -> None:
        png = render.result().png if render.exception() is None else None
        pool.submit(prepare, png).add_done_callback(prepared)

    x.add_done_callback(rendered)
    return out


def _score_key(s: Sample) -> tuple[str, str, int]:
    return s.prompt, s.completion, s.seed


def _result(x) -> RenderResult:
    return x if isinstance(x, RenderResult) else x.result()


def prefetching_generated(adapter: RewardAdapter, trainer):
    """The compiled engine's `on_wave` (grpo.generation_waves: a wave's paintings start rendering while
    the next wave generates), `on_step` (grpo.update_per_group: the whole step's, while TRL scores
    and updates a micro-batch at a time) and `on_finished` (the completions that ended while others
    decode, with their rows in the batch: each planned in its row's group, num_generations a row); the
    overlapped rollout's `on_generated` (the next step's, generated during this one: `step` says which).
    Decoded as TRL decodes completions; a text that came out otherwise would only be rendered again at
    reward time."""
    def generated(prompts, completion_ids, batch_rows=None, step=None):
        texts = trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        n = trainer.num_generations
        adapter.prefetch(prompts, texts, trainer.state.global_step if step is None else step, n,
                         rows=None if batch_rows is None else [r // n for r in batch_rows])

    return generated


def prefetching(generate, adapter: RewardAdapter, trainer):
    """Wrap a GRPOTrainer's `_generate` so rendering starts the moment completions exist."""
    def wrapped(prompts):
        out = generate(prompts)
        # out[3]: the decoded completions
        adapter.prefetch(prompts, out[3], trainer.state.global_step, trainer.num_generations)
        return out

    return wrapped
