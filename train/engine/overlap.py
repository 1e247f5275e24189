"""The overlapped step (`grpo.max_staleness: 1` or `2`): the next steps' completions are generated while step n's
are painted, judged and learned from.

    rollout = OverlappedRollout(sampler, staleness=1)   # sampler: CompiledGeneration or TransformersSampler
    trainer = GRPOTrainer(..., rollout_func=rollout)
    rollout.attach(trainer)                             # peeks the next steps' prompts as the Trainer fetches
    install_stale_correction(trainer, rollout, cap)     # salon.train.update.stale_correction

At step n's rollout call (the trainer holds the weights of n updates, theta_n), with staleness 1:

1. the completions for step n's prompts are taken from the generation started at step n-1 (sampled by
   theta_{n-1}: staleness 1), or generated now if none was started for these prompts (the first step, the
   first step of an epoch, staleness 0: the loop as it was);
2. the sampler is refreshed to theta_n in the trainer's thread (its copy of the weights: nothing generates at
   that moment, and TRL's update cannot start before the copies are queued), and the next step's prompts,
   peeked from the Trainer's data iterator, start generating in the engine's thread;
3. step n's completions go back to TRL, which paints, judges and updates while that thread decodes.

With staleness 2 the next two steps' prompts are decoded as one batch by theta_n, beside step n: step n+1
takes its rows (staleness 1), step n+2 the rest (staleness 2), and only then does the next batch start, by
theta_{n+2}, beside step n+2. A decode of few rows is bound by its kernels' latency more than by the bytes it
reads, so twice the rows cost far less than two decodes (on an H100 a decode step's matrix products took
1.53 ms at 8 rows and 1.68 at 64: results/probe_decode_linears_h100.json); step n+1 learns with the card
to itself. No second copy of the weights: one batch generates at a time, from the copy
refreshed just before it.

The sampler is read by one thread, its own, always (CUDA graphs and their memory pools are per thread); on
CUDA that thread decodes on a stream of its own, so the decode's kernels (memory-bound) run beside the
judge's prefill and the update's (arithmetic-bound) on the default stream. With `grpo.generation_sms` (auto:
half the card) the card is split (salon.train.engine.sm_partition): the decode's stream owns its
multiprocessors, and from the moment a generation starts ahead until it has finished (seen at the trainer's
next micro-batch or judge call, or its next rollout call) the trainer's thread works on a stream that owns the
rest, so the judge's and the update's large kernels cannot hold the decode's multiprocessors (a running
block is never preempted, and without the split each of a decode step's small kernels waits for one: on an
H100 the decode ran at a third of its speed beside them). Outside that window the trainer has the whole card.
The decode starts on its part (a step generated when TRL asks, the first of an epoch, too), and once the
trainer's thread waits for it (the step's update done before the decode: 8 rows) it queues the rest of its
steps on the whole card, where the trainer's part would otherwise idle (logged as salon/generation/
whole_card_s: how long it ran there). The update corrects for the stale sampler with each token's importance weight
(salon.train.update.stale_correction).

Per step the rollout logs, as salon/overlap/NAME: `staleness` (0, 1 or 2), `generation_s` (the sampler's own
time), `wait_s` (how long the step waited for it) and `overlap_s` (generation_s - wait_s: the time the
generation ran while the trainer worked); a batch of two steps' rows gives each step half its seconds and
half its overlap. The importance weights are logged by stale_correction.

Why a thread and not a process: the sampler is already a copy of the weights on the same card (the compiled
engine's merged copy), the refresh is an in-place copy between two tensors of one process, and the decode
releases the GIL in every kernel launch. Two cards: `grpo.generation_device` puts the sampler in a process of
its own (salon.train.engine.sampler_process) behind the same two calls, refresh and generate.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import torch

from salon.train.rollout import prompt_key

log = logging.getLogger(__name__)


def split_card(generation_sms: int | str, device):
    """The decode's and the trainer's parts of the card (salon.train.engine.sm_partition): `generation_sms`
    multiprocessors for the decode, or with "auto" half the card's, and None where auto cannot split it."""
    from salon.train.engine.sm_partition import PartitionError, partitioned_streams

    asked = generation_sms
    if asked == "auto":
        total = torch.cuda.get_device_properties(device).multi_processor_count
        asked = max(8, total // 16 * 8)  # half, in the driver's granules of 8 (Hopper's)
    try:
        partition = partitioned_streams(asked, device)
    except PartitionError as e:
        if generation_sms != "auto":
            raise PartitionError(f"grpo.generation_sms={generation_sms}: {e}; set generation_sms auto or null to "
                                 "share the card") from e
        log.warning("the card is not split for the overlapped step (%s): the decode shares it", e)
        return None
    log.info("the card split for the overlapped step: %d multiprocessors decode, %d judge and update",
             *partition.sms)
    return partition


def highest_priority_stream() -> torch.cuda.Stream:
    """A new stream of the highest priority the card offers (out of range: torch maps -100 to it)."""
    return torch.cuda.Stream(priority=-100)


@dataclass
class Generated:
    """One step's completions (`out`: the sampler's fields, row by row) with what is logged for them: the
    updates between the weights that sampled them and the step's (0: generated when TRL asked), and their share
    of the generation's seconds and of its time beside the trainer's work."""

    keys: list[str]
    out: dict
    staleness: int
    seconds: float
    overlap: float


def split_generation(whole: dict, keys: list[list[str]], wait: float) -> list[Generated]:
    """A batch generated ahead for len(keys) steps, cut into each step's rows; the i-th is i + 1 updates stale
    when handed (one step after another). The batch's seconds and its overlap (its seconds less the first step's
    wait for it) are shared evenly; its own metrics go with the first step."""
    metrics = whole.pop("metrics")
    seconds = metrics.get("seconds", wait)
    share, overlap = seconds / len(keys), max(0.0, seconds - wait) / len(keys)
    parts = []
    for i, (step_keys, rows) in enumerate(zip(keys, step_rows(keys))):
        out = {name: values[rows] for name, values in whole.items()}
        out["metrics"] = metrics if i == 0 else {}
        parts.append(Generated(step_keys, out, i + 1, share, overlap))
    return parts


def step_rows(steps: list[list]) -> list[slice]:
    """Where each step's rows lie in a batch of the steps' rows one after another."""
    ends = list(itertools.accumulate(len(step) for step in steps))
    return [slice(end - len(step), end) for step, end in zip(steps, ends)]


class OverlappedRollout:
    """TRL's `rollout_func` that generates `staleness` steps ahead in one batch (see the module doc). `staleness` 0
    generates each step's completions when TRL asks, through the same sampler and thread."""

    def __init__(self, sampler, staleness: int, generation_sms: int | str | None = None):
        self.sampler, self.staleness, self.generation_sms = sampler, staleness, generation_sms
        self.partition = None  # with generation_sms on CUDA: the decode's and the trainer's parts (attach)
        self.whole_stream = None  # the trainer thread's stream while it works on its part of the card
        # one thread for the sampler's whole life: torch.compile's CUDA graphs are recorded per thread
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="salon-generate")
        self.stream = None  # a CUDA stream of the engine's own, made in its thread on first use
        # with the card split: set while the trainer's thread waits for the decode ahead (its part idles), and the
        # decode's stream on the whole card, which it moves to then (made in the engine's thread on first use)
        self.trainer_waits = threading.Event()
        self.whole_card_stream = None
        self.on_whole_card_since: float | None = None  # when the running decode moved there
        self.cuda = False  # whether the trainer (and so the sampler) is on CUDA: set by attach
        # (each step's prompt keys, their generation as one batch) of the next steps
        self.ahead: tuple[list[list[str]], Future] | None = None
        self.kept: list[Generated] = []  # the later steps' completions of a batch already handed in part
        self.next_prompts: list[list] | None = None  # the next `staleness` steps' prompts, as peeked
        # what the last call handed TRL: its staleness (stale_correction reads it)
        self.handed_staleness = 0
        self.steps = {"overlapped": 0, "synchronous": 0}
        # called in the engine's thread with (prompts, completion ids, step=the step they are for) as soon as a
        # step's completions are generated ahead (the recipe's reward.prefetching_generated)
        self.on_generated = None

    # ---- wiring ------------------------------------------------------------------------------------
    def attach(self, trainer) -> None:
        """Peek ahead of the Trainer's fetches, to the first batch of each of the next `staleness` optimiser steps:
        it is that step's generation (TRL's RepeatSampler repeats one generation batch over a step's
        micro-batches). What is peeked is handed back, in order, as the Trainer fetches it."""
        self.cuda = trainer.accelerator.device.type == "cuda"
        if self.cuda and self.generation_sms and self.staleness:
            self.partition = split_card(self.generation_sms, trainer.accelerator.device)
        if self.partition is not None:  # each micro-batch's forward and backward: the whole card once it is free
            step = trainer.training_step

            @functools.wraps(step)
            def stepping(*args, **kwargs):
                self.whole_card_if_done()
                return step(*args, **kwargs)

            trainer.training_step = stepping
        fetch = trainer.get_batch_samples
        peeked: dict = {}  # the iterator of the epoch -> the batches fetched from it ahead (None: it ran out)

        @functools.wraps(fetch)
        def fetching(epoch_iterator, num_batches, device):
            held = peeked.pop(epoch_iterator, [])
            peeked.clear()  # an earlier epoch's iterator is done with
            ran_out = None in held
            ahead = [b for b in held if b is not None]
            batches, ahead = ahead[:num_batches], ahead[num_batches:]
            if len(batches) < num_batches and not ran_out:
                batches += fetch(epoch_iterator, num_batches - len(batches), device)[0]
            # the first batch of each of the next `staleness` steps
            want = (max(self.staleness, 1) - 1) * num_batches + 1
            while len(ahead) < want and not ran_out:
                nxt = fetch(epoch_iterator, 1, device)[0]
                ahead += nxt[:1]
                ran_out = not nxt
            peeked[epoch_iterator] = ahead + [None] * ran_out
            # none past an epoch's end: the next epoch's first step generates when TRL asks
            self.next_prompts = [[row["prompt"] for row in ahead[j]]
                                 for j in range(0, min(want, len(ahead)), num_batches)] or None
            return batches, trainer._get_num_items_in_batch(batches, device)

        trainer.get_batch_samples = fetching

    def close(self) -> None:
        if self.ahead is not None:
            self.ahead[1].cancel()
        self.kept = []
        self._trainer_on_whole_card()
        self.thread.shutdown(wait=True)
        if hasattr(self.sampler, "close"):  # a sampler in a process of its own: the process ends
            self.sampler.close()

    # ---- TRL's rollout_func ------------------------------------------------------------------------
    def __call__(self, prompts: list, trainer) -> dict:
        keys = [prompt_key(p) for p in prompts]
        ahead, self.ahead = self.ahead, None
        kept, self.kept = self.kept, []
        t0 = time.perf_counter()
        training = trainer.model.training
        if kept and kept[0].keys == keys and training:  # generated with the step before's batch
            part, self.kept = kept[0], kept[1:]
            out, wait = part.out, time.perf_counter() - t0
            self.steps["overlapped"] += 1
        elif ahead is not None and ahead[0][0] == keys and training:
            whole = self._wait_for(ahead[1])
            self._trainer_on_whole_card()
            wait = time.perf_counter() - t0
            part, *self.kept = split_generation(whole, ahead[0], wait)
            out = part.out
            self.steps["overlapped"] += 1
        else:
            if ahead is not None:  # generated for other prompts (an evaluation came between): not these
                self._wait_for(ahead[1])
                self._trainer_on_whole_card()
                log.info("overlapped generation: the prompts generated ahead were not the step's; generating now")
            self.sampler.refresh(trainer)
            out = self._wait_for(self._in_thread(self.sampler.generate, prompts, trainer))
            wait = time.perf_counter() - t0
            part = Generated(keys, out, staleness=0, seconds=out["metrics"].get("seconds", wait), overlap=0.0)
            self.steps["synchronous"] += 1
        # none for steps past the last: a decode nothing would take, running on into the trainer's teardown
        state = trainer.state
        after = state.max_steps - state.global_step - 1 if state.max_steps > 0 else self.staleness
        if self.staleness and training and not self.kept and self.next_prompts and after > 0:
            nxt, self.next_prompts = self.next_prompts[:min(self.staleness, after)], None
            # here, in the trainer's thread, before TRL's update can write the weights the copy is made from
            self.sampler.refresh(trainer)
            step = trainer.state.global_step + 1  # the step the first of them is for
            self.ahead = ([[prompt_key(p) for p in step_prompts] for step_prompts in nxt],
                          self._in_thread(self._generate_ahead, nxt, trainer, step))
            self._trainer_on_its_part()
        metrics = out.pop("metrics", {})
        for name, value in (("staleness", part.staleness), ("generation_s", part.seconds), ("wait_s", wait),
                            ("overlap_s", part.overlap)):
            trainer._log_metric(f"salon/overlap/{name}", float(value))
        for name, value in metrics.items():
            trainer._log_metric(f"salon/generation/{name}", float(value))
        self.handed_staleness = part.staleness
        return out

    # ---- the trainer thread's stream while a generation runs ahead (generation_sms) ----------------------
    def whole_card_if_done(self) -> None:
        """At a boundary of the trainer's work (a micro-batch, a judge call: the recipe's reward.before_judging), the
        trainer's thread takes the whole card back once the generation ahead has finished, not at the next rollout
        call: where the step outlasts the decode (64 rows: the judge and the update hold it), the rest of the step
        would otherwise run on its part with the decode's idle. Between kernels of one micro-batch it never switches:
        the backward runs on its forward's stream."""
        if self.whole_stream is not None and self.ahead is not None and self.ahead[1].done():
            self._trainer_on_whole_card()

    def _trainer_on_its_part(self) -> None:
        """From here the trainer's thread queues its work on its part of the card, after what it queued so far."""
        if self.partition is None or self.whole_stream is not None:
            return
        self.whole_stream = torch.cuda.current_stream()
        self.partition.second.wait_stream(self.whole_stream)
        torch.cuda.set_stream(self.partition.second)

    def _trainer_on_whole_card(self) -> None:
        """Back to the stream it had, after what it queued on its part. Memory the thread freed meanwhile went
        back to the pool of the stream it was made on, and work there now waits for the part's: no block is
        reused while a kernel on the part still reads it."""
        if self.whole_stream is None:
            return
        self.whole_stream.wait_stream(self.partition.second)
        torch.cuda.set_stream(self.whole_stream)
        self.whole_stream = None

    def _wait_for(self, generation: Future) -> dict:
        """The generation ahead's result. Meanwhile the trainer's thread queues nothing, so the decode may take its
        part of the card too (_decode_on_whole_card_once_free)."""
        self.trainer_waits.set()
        try:
            return generation.result()
        finally:
            self.trainer_waits.clear()

    # ---- the engine's thread -----------------------------------------------------------------------
    def _decode_on_whole_card_once_free(self) -> None:
        """Before each decode step (StaticDecoder.between_steps): once the trainer's thread waits for this decode,
        the decode's later steps queue on a stream of the whole card, after what it queued on its part. Its part's
        stream is not used again in this generation, and the generation ends with a sync of the stream it ended
        on: a block its part's stream freed is reused only after that (the caching allocator keeps blocks per
        stream), so nothing is read after it is written over."""
        if self.on_whole_card_since is not None or not self.trainer_waits.is_set():
            return
        if self.whole_card_stream is None:
            self.whole_card_stream = highest_priority_stream()
        self.whole_card_stream.wait_stream(torch.cuda.current_stream())
        torch.cuda.set_stream(self.whole_card_stream)
        self.on_whole_card_since = time.perf_counter()

    def _generate_ahead(self, steps: list[list], trainer, step: int) -> dict:
        """The completions of one or more steps' prompts (`steps`, the first for `step`), decoded as one batch."""
        out = self.sampler.generate([p for step_prompts in steps for p in step_prompts], trainer)
        if self.partition is not None and "metrics" in out:
            since, self.on_whole_card_since = self.on_whole_card_since, None
            out["metrics"]["whole_card_s"] = 0.0 if since is None else time.perf_counter() - since
        if self.on_generated is not None:  # their paintings start now, while this step still learns
            for offset, (step_prompts, rows) in enumerate(zip(steps, step_rows(steps))):
                self.on_generated(step_prompts, out["completion_ids"][rows], step=step + offset)
        return out

    def _in_thread(self, fn, *args) -> Future:
        """Run in the engine's thread after what the trainer's thread queued on the card so far (the refresh's
        copies into the sampler's weights)."""
        ready = None
        if self.cuda:
            ready = torch.cuda.Event()
            ready.record()  # on the trainer thread's current stream
        # the trainer thread's context variables go along: trackio keeps its run in one, and TRL's profiling
        # (its log-prob pass, which a sampler may call) logs to it
        return self.thread.submit(contextvars.copy_context().run, self._run, fn, ready, *args)

    def _run(self, fn, ready, *args):
        if ready is None:
            return fn(*args)
        if self.stream is None and self.partition is not None:
            self.stream = self.partition.first  # its own multiprocessors (generation_sms)
            if hasattr(self.sampler, "between_steps"):  # the compiled engine's decode loop, in this thread
                self.sampler.between_steps = self._decode_on_whole_card_once_free
        elif self.stream is None:
            # the highest priority the card offers: a decode step's small kernels go first when the judge's
            # or the update's large ones free a multiprocessor, so the step's longest part is slowed least
            self.stream = highest_priority_stream()
        self.stream.wait_event(ready)
        with torch.cuda.stream(self.stream):
            try:
                out = fn(*args)
            finally:
                # done on the card before the next refresh overwrites the copy: on its part or, where it moved
                # there, on the whole card (after its part's work)
                torch.cuda.current_stream().synchronize()
                self.on_whole_card_since = None
        return out
