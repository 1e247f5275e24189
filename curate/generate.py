"""Generation runs: several models paint a subject; every candidate is rendered, gated, stored.

    salon curate generate --subject "peach hibiscus" --model openai:NAME --model hf:PATH -n 20 \
        [--base-url URL] [--guides] [--rounds R] --pool POOL

Model calls and renders overlap: each model's calls run under its own concurrency limit and
push replies onto a queue that a few render workers drain, so the browsers never wait for a
model. Each candidate is stored the moment its render is back, so a killed run loses only
what was in flight; a rerun counts what the pool holds and makes up the difference to N per
model (a stored candidate whose render was unavailable is rendered again). Failed calls are
counted per model and never stored: they are infrastructure, not candidates.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from salon.curate.backends import BackendConfig, BackendFatal, Limited, Sampling, make_backend, parse_spec
from salon.curate.extract import extract_code
from salon.curate.guides import load_guides
from salon.curate.prompts import PROMPT_VERSION, Subject, SubjectBook, paint_messages
from salon.curate.refine import critique, revision
from salon.models.names import model_problem
from salon.pool.errors import ConfigError
from salon.pool.models import Candidate, GuidePhoto


@dataclass
class GenerateConfig:
    subject: str
    models: list[str]
    n: int
    pool: str | Path
    guides: bool = False
    rounds: int = 0
    critic: str | None = None                  # default: each painter critiques its own work
    temperatures: tuple[float, ...] = (0.6, 0.9, 1.1)  # cycled over candidates, as the prior art
    top_p: float = 0.95
    max_tokens: int = 4096
    subjects_file: str | None = None
    backend: BackendConfig = field(default_factory=BackendConfig)
    render_workers: int = 0                    # 0: twice what the renderer renders at once, +2
    progress: bool = True

    def __post_init__(self):
        problems = []
        if self.n < 1:
            problems.append(f"-n must be at least 1, got {self.n}")
        if not self.models:
            problems.append("give at least one --model backend:name")
        if len(set(self.models)) != len(self.models):
            problems.append("a --model is given twice")
        for spec in self.models + ([self.critic] if self.critic else []):
            try:
                kind, model = parse_spec(spec)
            except ConfigError as e:
                problems += e.problems
                continue
            if kind == "hf" and (problem := model_problem("hf:", model)):  # before any browser starts
                problems.append(problem)
        if self.rounds < 0:
            problems.append(f"--rounds must be 0 or more, got {self.rounds}")
        if not self.temperatures or any(t < 0 or t > 2 for t in self.temperatures):
            problems.append(f"temperatures must be 0-2, got {self.temperatures}")
        if not 0 < self.top_p <= 1 or self.max_tokens < 16:
            problems.append("top_p must be in (0, 1] and max_tokens at least 16")
        if problems:
            raise ConfigError(problems, where="curate generate")


@dataclass
class Counts:
    ok: int = 0
    rejected: int = 0
    failed: int = 0                # calls that got no answer, renders that were unavailable
    duplicate: int = 0             # the same (code, seed) was already in the pool
    errors: Counter = field(default_factory=Counter)
    stopped: str | None = None     # why no further call to this model was made

    def as_dict(self) -> dict:
        return {"ok": self.ok, "rejected": self.rejected, "failed": self.failed,
                "duplicate": self.duplicate, "errors": dict(self.errors.most_common(5)),
                "stopped": self.stopped}


@dataclass
class Report:
    counts: dict[str, Counts]      # by model, all rounds together
    stored: int = 0                # new rows in the pool
    by_round: Counter = field(default_factory=Counter)  # new rows per refinement round

    def as_dict(self) -> dict:
        return {"models": {m: c.as_dict() for m, c in self.counts.items()},
                "stored": self.stored, "by_round": dict(self.by_round)}


@dataclass
class _Job:
    """A reply on its way to the renderer, or a stored candidate to render again."""

    model: str
    candidate: Candidate


def generate(config: GenerateConfig, renderer=None) -> Report:
    return asyncio.run(generate_async(config, renderer))


async def generate_async(config: GenerateConfig, renderer=None) -> Report:
    """Run a generation; `renderer` is an open `Renderer` to share, else one is started."""
    from salon.pool.store import Pool

    subject = SubjectBook.load(config.subjects_file).get(config.subject)
    guides = load_guides(config.pool, subject) if config.guides else []
    if config.guides and not guides:
        raise ConfigError([f"no guide photos for {subject.name!r} in {config.pool}; fetch some "
                           f"first: salon curate guides {subject.name!r} --taxon NAME "
                           f"--pool {config.pool}"], where="--guides")
    painters = {m: Limited(make_backend(m, config.backend), config.backend) for m in config.models}
    critic = (Limited(make_backend(config.critic, config.backend), config.backend)
              if config.critic and config.rounds else None)
    try:
        problems = [f"{p.name} cannot look at photos; drop --guides or choose an "
                    f"image-capable model" for p in painters.values()
                    if config.guides and not p.backend.supports_images]
        problems += [f"{c.name} cannot look at paintings, so it cannot critique; pass --critic "
                     f"with an image-capable model" for c in ([critic] if critic else
                                                               painters.values())
                     if config.rounds and not c.backend.supports_images]
        if problems:
            raise ConfigError(problems, where="curate generate")
        with Pool.open(config.pool, create=True) as pool:  # a generation run may start a pool
            run = _Run(config, subject, guides, painters, critic, pool)
            async with contextlib.AsyncExitStack() as stack:
                if renderer is None:
                    from salon.curate.sandbox.render import Renderer, RenderConfig

                    renderer = await stack.enter_async_context(Renderer(RenderConfig()))
                await run.execute(renderer)
            return run.report
    finally:
        for limited in list(painters.values()) + ([critic] if critic else []):
            await limited.aclose()


class _Run:
    def __init__(self, config, subject: Subject, guides: list[GuidePhoto], painters, critic, pool):
        self.config, self.subject, self.guides = config, subject, guides
        self.painters, self.critic, self.pool = painters, critic, pool
        self.report = Report({m: Counts() for m in painters})
        self.photos: dict[int, bytes] = {}
        self.bar = None

    # -- the run ------------------------------------------------------------------------------

    async def execute(self, renderer) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=0, unit="cand", disable=not self.config.progress, leave=True)
        try:
            for round_ in range(self.config.rounds + 1):
                jobs = self._round_jobs(round_)
                await self._pipeline(renderer, jobs)
        finally:
            self.bar.close()

    async def _pipeline(self, renderer, producers: list) -> None:
        """Run the model calls in `producers` and render what they yield, overlapped."""
        queue: asyncio.Queue = asyncio.Queue()
        # The renderer bounds its own concurrency; spare workers carry static rejects (no
        # browser) past sketches waiting for a page.
        slots = getattr(renderer, "browsers", 1) * getattr(renderer, "pages", 1)
        workers = [asyncio.create_task(self._render_worker(renderer, queue))
                   for _ in range(self.config.render_workers or 2 * slots + 2)]
        try:
            await asyncio.gather(*(p(queue) for p in producers))
            await queue.join()
        finally:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    def _round_jobs(self, round_: int) -> list:
        """One coroutine factory per planned call (or re-render) of this round."""
        jobs = []
        mine = [c for c in self.pool.candidates(subject=self.subject.name)
                if c.round == round_ and (c.guide is not None) == self.config.guides]
        for model in self.painters:
            stored = [c for c in mine if c.model == model]
            jobs += [self._rerender(model, c) for c in stored if c.ok is None]
            if round_ == 0:
                # Seeds continue after the highest stored one, so a resumed deterministic model
                # does not repeat a stored (code, seed) pair.
                first = max((c.seed for c in stored), default=-1) + 1
                todo = max(0, self.config.n - len(stored))
                jobs += [self._paint(model, seed) for seed in range(first, first + todo)]
            else:
                done = {c.parent_id for c in stored}
                parents = [c for c in self.pool.candidates(subject=self.subject.name, model=model,
                                                           ok=True)
                           if c.round == round_ - 1 and c.id not in done
                           and (c.guide is not None) == self.config.guides]
                jobs += [self._refine(model, p, round_) for p in parents]
        self.bar.total += len(jobs)
        self.bar.refresh()
        return jobs

    # -- producers ----------------------------------------------------------------------------

    def _rerender(self, model: str, stored: Candidate):
        async def produce(queue):
            await queue.put(_Job(model, stored))
        return produce

    def _paint(self, model: str, seed: int):
        async def produce(queue):
            guide = self.guides[seed % len(self.guides)] if self.guides else None
            messages, sampling = paint_messages(self.subject, self._photo(guide)), self._sampling(seed)
            call = await self.painters[model].call(messages, sampling)
            if not call.ok:
                return self._failed(model, call.error)
            await queue.put(_Job(model, self._candidate(
                model, call.completion, seed, sampling, guide, 0, None, messages[-1].text)))
        return self._guarded(model, produce)

    def _refine(self, model: str, parent: Candidate, round_: int):
        async def produce(queue):
            guide = self._guide_of(parent)
            photo = self._photo(guide)
            png_path = self.pool.image_path(parent.id)
            advice = await critique(self.critic or self.painters[model], self.subject,
                                    png_path.read_bytes(), photo)
            if advice.error:
                return self._failed(model, f"critic: {advice.error}")
            if advice.advice is None:
                return self._failed(model, "critic gave no usable advice")
            messages, prompt = revision(self.subject, parent.code, advice.advice, photo)
            sampling = self._sampling(parent.seed)
            call = await self.painters[model].call(messages, sampling)
            if not call.ok:
                return self._failed(model, call.error)
            await queue.put(_Job(model, self._candidate(
                model, call.completion, parent.seed, sampling, guide, round_, parent.id, prompt)))
        return self._guarded(model, produce)

    def _guarded(self, model: str, produce):
        """Stop calling a model after a call that no retry can fix (bad key, unknown model)."""
        async def guarded(queue):
            counts = self.report.counts[model]
            if counts.stopped:
                return self._tick()
            try:
                await produce(queue)
            except BackendFatal as e:
                counts.stopped = counts.stopped or str(e)
                self._tick()
        return guarded

    # -- render + store -----------------------------------------------------------------------

    async def _render_worker(self, renderer, queue: asyncio.Queue) -> None:
        while True:
            job = await queue.get()
            try:
                await self._render_and_store(renderer, job)
            finally:
                queue.task_done()

    async def _render_and_store(self, renderer, job: _Job) -> None:
        c, counts = job.candidate, self.report.counts[job.model]
        # The gate rejects code-less replies (`no_sketch`) statically, without a browser.
        result = await renderer.render(c.code or None, seed=c.seed)
        if result.unavailable:
            c.ok = None  # stored without a render; the next run renders it again
        else:
            c.ok, c.violations, c.js_errors = result.ok, list(result.violations), \
                list(result.js_errors)
            c.render_ms, c.paint_fraction, c.png = (result.render_ms, result.paint_fraction,
                                                    result.png)
        new = await asyncio.to_thread(self.pool.add_candidate, c)
        self.report.stored += int(new)
        self.report.by_round[c.round] += int(new)
        if c.ok is None:
            counts.failed += 1
            counts.errors["render unavailable"] += 1
        elif not new:
            counts.duplicate += 1
        elif c.ok:
            counts.ok += 1
        else:
            counts.rejected += 1
        self._tick()

    # -- helpers ------------------------------------------------------------------------------

    def _candidate(self, model, completion, seed, sampling, guide, round_, parent, prompt):
        code = extract_code(completion.text) or ""
        return Candidate(
            code=code, seed=seed, subject=self.subject.name, prompt=prompt, model=model,
            prompt_version=PROMPT_VERSION,
            sampling=sampling.as_dict() | {"finish_reason": completion.finish_reason,
                                           "reply_truncated": completion.truncated},
            round=round_, parent_id=parent, reply=completion.text, source="salon curate generate",
            guide=guide)

    def _sampling(self, slot: int) -> Sampling:
        temps = self.config.temperatures
        return Sampling(temperature=temps[slot % len(temps)], top_p=self.config.top_p,
                        max_tokens=self.config.max_tokens, seed=slot)

    def _guide_of(self, c: Candidate) -> GuidePhoto | None:
        if c.guide is None:
            return None
        return next((g for g in self.guides if g.id == c.guide.id), None)

    def _photo(self, guide: GuidePhoto | None) -> bytes | None:
        if guide is None:
            return None
        if guide.id not in self.photos:
            self.photos[guide.id] = (Path(self.config.pool) / guide.file).read_bytes()
        return self.photos[guide.id]

    def _failed(self, model: str, error: str | None) -> None:
        counts = self.report.counts[model]
        counts.failed += 1
        counts.errors[(error or "unknown error")[:160]] += 1
        self._tick()

    def _tick(self) -> None:
        self.bar.update(1)
        self.bar.set_postfix_str("  ".join(
            f"{m.split('/')[-1][:24]} ok {c.ok} rej {c.rejected} fail {c.failed}"
            for m, c in self.report.counts.items()), refresh=False)
