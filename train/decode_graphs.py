"""Decode steps run from buffers at fixed addresses, and captured N at a time into CUDA graphs
(`grpo.generation_graph_steps`).

    buffers = LoopBuffers.allocate(batch, cache_length, max_new_tokens, device)   # once per shape
    for first, steps, keys in chunks(bucket, max_new_tokens, per_graph=32, key_chunk=256, buckets=True):
        graphs.run((keys, steps), lambda: [advance(keys) for _ in range(steps)])   # eager once, then replayed

Why. torch.compile's reduce-overhead mode gives one CUDA graph replay per decode step, and between
two replays Python writes the token into the output, marks the new position in the mask and starts
the next step: on an H200 at batch 8 the card was idle 12-14 % of a 3.9-4.4 ms step
(benchmarks/results/decode_profile_buckets_h200.json). Here everything a step reads and writes lives
in `LoopBuffers`, and the step index itself is a device tensor, so the steps of a chunk need nothing
from the host: one graph replay runs N of them back to back.

How. The decode step is compiled by inductor without CUDA graphs of its own (decode.py), the
attended length a dynamic dimension; `ChunkGraphs.run` runs a chunk eagerly the first time its key
(attended length, steps) is seen, which compiles, autotunes and warms cuBLAS, captures it the second
time and replays it from then on. Chunks never cross a change of the attended length (`chunks`), so
one graph per length serves every chunk of that length. Graphs share one memory pool: they never run
at once, and what one step leaves for the next lives in the buffers, outside the pool. Random numbers
come from the CUDA generator's graph-safe state, advanced at every replay, so each replay samples
afresh. The loop runs on a stream of its own (capture cannot run on the default stream) that waits
for the caller's work and that the caller's stream waits for in turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from salon.train.decode_attention import bucket_keys


@dataclass
class LoopBuffers:
    """The decode loop's state: the last token (batch, 1), its position (batch, 1), the 2D attention
    mask (batch, cache), rows not finished (batch,), the output (batch, max_new_tokens), and the
    decode step `index` and the cache position its token takes, `filled` (1-element long tensors)."""

    token: torch.Tensor
    position: torch.Tensor
    mask: torch.Tensor
    unfinished: torch.Tensor
    out: torch.Tensor
    index: torch.Tensor
    filled: torch.Tensor

    @classmethod
    def allocate(cls, batch: int, length: int, max_new: int, device) -> "LoopBuffers":
        def longs(*shape):
            return torch.zeros(shape, dtype=torch.long, device=device)

        return cls(longs(batch, 1), longs(batch, 1), longs(batch, length),
                   torch.ones(batch, dtype=torch.bool, device=device), longs(batch, max_new), longs(1), longs(1))

    def start(self, mask: torch.Tensor, position: torch.Tensor, first: torch.Tensor, unfinished: torch.Tensor,
              pad: int, bucket: int) -> None:
        """After the prefill: its mask, the prompt's last positions, the first token, rows still going."""
        self.mask.copy_(mask)
        self.position.copy_(position)
        self.out.fill_(pad)
        self.out[:, 0] = first
        self.token.copy_(first[:, None])
        self.unfinished.copy_(unfinished)
        self.index.fill_(1)
        self.filled.fill_(bucket)  # the first token fed back takes the first position after the prompt

    def advance(self, step: Callable) -> None:
        """One decode step: mark the fed token's position, move the positions on, run `step(token,
        position, mask, unfinished)` (the model, sampling and EOS bookkeeping: returns the new tokens
        and the rows still going), store its results."""
        self.mask.index_fill_(1, self.filled, 1)
        self.position.add_(1)
        token, unfinished = step(self.token, self.position, self.mask, self.unfinished)
        self.out.index_copy_(1, self.index, token[:, None])
        self.token.copy_(token[:, None])
        self.unfinished.copy_(unfinished)
        self.index.add_(1)
        self.filled.add_(1)


def chunks(bucket: int, max_new: int, per_graph: int, key_chunk: int, buckets: bool):
    """(first step, steps, attended length or None) for decode steps 1 .. max_new - 1; a chunk holds at most
    `per_graph` steps and never crosses a change of the attended length (buckets)."""
    length = bucket + max_new
    i = 1
    while i < max_new:
        steps = min(per_graph, max_new - i)
        keys = None
        if buckets:  # step i attends bucket + i positions, rounded up to a multiple of key_chunk
            keys = bucket_keys(bucket + i, length, key_chunk)
            steps = min(steps, keys - (bucket + i) + 1)
        yield i, steps, keys
        i += steps


class ChunkGraphs:
    """CUDA graphs of decode chunks by key, on one side stream and one memory pool (see the module doc)."""

    def __init__(self, device):
        self.stream = torch.cuda.Stream(device)
        self.graphs: dict = {}
        self.seen: set = set()
        self.pool = None

    def run(self, key, steps: Callable[[], None]) -> None:
        """Run `steps` (the chunk's decode steps) on this stream: eagerly for a new key, else its graph."""
        graph = self.graphs.get(key)
        if graph is None and key in self.seen:
            graph = torch.cuda.CUDAGraph()
            # thread_local: another thread's CUDA calls (a judge thread, say) do not break the capture
            graph.capture_begin(pool=self.pool, capture_error_mode="thread_local")
            try:
                steps()
            finally:
                graph.capture_end()
            self.pool = self.pool or graph.pool()
            self.graphs[key] = graph
        if graph is None:
            steps()
            self.seen.add(key)
        else:
            graph.replay()
