"""Attention of one decode token over the filled part of a static KV cache: `grpo.generation_attention`
`buckets` (SDPA on the cache cut at a chunk boundary) or `filled` (a Triton kernel).

    keys = bucket_keys(filled, cache_length)               # buckets: a Python int, one compiled step per value
    span = DecodeSpan.start(mask, bucket, prompt_ids)       # filled: once per generate call
    span.advance(end)                                      # before each decode step: positions [.., end) are filled
    out = filled_decode_attention(query, key, value, span, scale)   # (batch, 1, heads, head_dim)

A static cache holds bucket + max_new_tokens positions per row, and SDPA reads all of them at every
step, masked or not: at 8 x 2,048 new tokens after a 600-token prompt the filled part is about 61 %
of the cache on average (shared/reference/generation-speed.md: 1.89 ms against 0.78 ms a step on an
H200).

Buckets. Every row's prompt is left-padded to the same bucket, so at decode step i exactly bucket + i
positions are filled in every row, a number the loop knows without asking the device. Rounded up
to a multiple of `KEY_CHUNK`, it is the length of the step's mask, and the decoder's attention reads
key and value only up to the mask's length. transformers would build that mask at the cache's full
length (on a StaticCache `get_mask_sizes` gives max_cache_len, and `masking_utils.sdpa_mask` pads
the 2D mask to it), so the step builds it itself from the decoder's 2D mask cut at the length and
passes it as the full-attention layers' prepared mask (a dict of masks by layer kind, which the
model uses as it is). The positions cut off are ones the whole cache's mask gives zero weight: the
same attention over fewer masked positions. Each length is its own static shape, so its own compiled
step (decode.py): about max_new_tokens / KEY_CHUNK of them per prompt bucket.

Filled. A split-KV Triton kernel reads only positions [begin, end): begin is the first position
any row's prompt uses (the bucket's left padding before it is skipped), end the positions filled so
far, read from a device tensor, so one captured CUDA graph serves every step. Each program takes
one (tile of query rows, KV head, slice of positions), folds the KV head's query heads into the tile
(grouped query attention without repeating K and V) and keeps an online softmax in float32; a second
kernel merges the slices by their log-sum-exp. The launch is as large as the longest call could need
(the graph is captured once), so most programs have nothing to read: the prompt's positions have
passed, the new ones are not filled yet, or the tile serves no row. Those return before loading
anything, and the merge knows from the bounds which slices were written.

Rows with the same prompt (the completions of one GRPO group) hold the same prompt keys and values,
so the prompt positions are read once for up to GROUP_ROWS of them: a program serves a tile of query
rows, either one row's query heads over its own new positions, or a group's rows' query heads (8 rows
of Qwen3-1.7B's 2 heads per KV head: a tile of 16, the least the tensor cores take) over the prompt
positions, read from the group's first row. Each row's slices, its prompt's and its own, are then
merged by their log-sum-exp. The values read are the ones the row holds itself (the same prompt
through the same prefill), so nothing changes but how often they are read: at 64 rows, 8 prompts of
600 tokens and 1,024 new tokens so far, the prompt was 37 % of a step's key and value bytes read
once a row, and 7 % read once a group.

The mask is the decoder's own 2D attention mask (left padding and unfilled positions 0), applied per
position, as the keys are read, from the tile's key row (rows of one prompt share its left padding),
so the result is SDPA's over the same keys up to float rounding; on a CPU (and under
compile off CUDA) the same attention runs as SDPA on the cache cut at `end` (`reference_attention`),
which the tests compare with the kernel under Triton's interpreter.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import torch

from salon.train.engine.fp8_cache import Fp8Rows
from salon.train.update.causal_loss import full_attention_only  # the update's loss asks it too

try:
    import triton
    import triton.language as tl
except ImportError:  # no Triton: the reference path only (a CPU-only torch build)
    triton = None

ATTENTION = "salon_grouped_decode"  # the merged copy's attention (decode.grouped_decode_attention)
KEY_CHUNK = 256  # buckets: the positions a step attends, rounded up to a multiple of this
# The tiling: the tiles' fastest of 16 in benchmarks/probe_filled_attention.py on an H200 at 64 rows
# (results/probe_filled_attention_tiles_h200.json: 104.1 and 159.6 us a layer at 1,024 and 2,048 new
# tokens, 1.05x and 1.03x the kernel of one row a program, 9277e0d, timed beside it; the split of 256
# it had was 0.89-0.95x). At 8 rows every tiling was slower than one row a program (0.86-0.94x), and
# `auto` read the whole cache there then; in the trainer on an H100 the kernel at 8 rows has since beaten it
# (decode.FILLED_FROM_ROWS).
BLOCK_N = 128  # positions per inner step of a program
SPLIT = 512  # positions per program (a multiple of BLOCK_N)
# At few rows a step's programs are too few to keep the card's memory busy: each reads fewer positions, so more
# of them run at once. On an H100 at 8 rows a layer took 9.9, 16.4, 21.6 and 34.0 us at 64, 512, 1,024 and
# 2,048 new tokens with 128 a program, against 12.9, 18.5, 23.5 and 34.1 with 512; at 16 rows no split was
# faster by more than 2 us (results/probe_filled_attention_splits_h100.json)
FEW_ROWS, FEW_ROWS_SPLIT = 8, 128  # a multiple of BLOCK_N, as SPLIT
NUM_WARPS, NUM_STAGES = 4, 2  # the tile kernel's warps per program and software-pipelining depth
# rows of one prompt a tile serves over the prompt positions: with Qwen3-1.7B's 2 query heads a KV
# head, 16 query rows, the smallest tile the tensor cores take
GROUP_ROWS = 8


@dataclass
class DecodeSpan:
    """What the kernel needs besides q, k, v: the 2D mask (batch, cache), bounds = [begin, end,
    prompt_end] (int32, on the device; end moves every step), and its tiles: `slots` (2 x batch,
    GROUP_ROWS), the rows whose queries each tile serves (-1: none), and `kv_row`, the row whose keys
    and values it reads. Tiles [0, batch) are the rows over their own new positions, one row each;
    the ones after, the rows of each prompt, GROUP_ROWS at a time, over the prompt positions (the
    rest serve no row: the table is as long whatever the prompts, so the launch is too, and a CUDA
    graph captured for one call replays for the next)."""

    mask: torch.Tensor
    bounds: torch.Tensor
    slots: torch.Tensor
    kv_row: torch.Tensor

    @classmethod
    def start(cls, mask: torch.Tensor, bucket: int, prompt_ids: list[list[int]],
              group_rows: int = GROUP_ROWS) -> "DecodeSpan":
        batch, longest = len(prompt_ids), max(len(p) for p in prompt_ids)
        by_prompt: dict[tuple, list[int]] = {}
        for i, p in enumerate(prompt_ids):
            by_prompt.setdefault(tuple(p), []).append(i)
        shared = [rows[i:i + group_rows] for rows in by_prompt.values() for i in range(0, len(rows), group_rows)]
        slots = torch.full((2 * batch, group_rows), -1, dtype=torch.int32)
        kv_row = torch.zeros(2 * batch, dtype=torch.int32)
        slots[:batch, 0] = kv_row[:batch] = torch.arange(batch, dtype=torch.int32)
        for tile, rows in enumerate(shared, start=batch):
            slots[tile, :len(rows)] = torch.tensor(rows, dtype=torch.int32)
            kv_row[tile] = rows[0]
        bounds = torch.tensor([bucket - longest, bucket, bucket], dtype=torch.int32)
        return cls(mask, bounds.to(mask.device), slots.to(mask.device), kv_row.to(mask.device))

    def advance(self, end: int) -> None:
        # fill_, not `bounds[1] = end`: that copies a host scalar into the card's tensor, which waits for
        # the card, and once a step it kept the host from queueing the next step ahead
        self.bounds[1:2].fill_(end)

    @property
    def shared_rows(self) -> int:
        """Rows whose prompt positions another row's are read with (the prompt read once for them)."""
        batch = len(self.mask)
        prompt_tiles = self.slots[batch:]
        return int((prompt_tiles >= 0).sum()) - int((prompt_tiles[:, 0] >= 0).sum())


def reference_attention(query, key, value, span: DecodeSpan, scale: float) -> torch.Tensor:
    """The same attention by SDPA: the cache cut at end (eager) or whole (under compile), masked; float8 rows
    (fp8_cache.Fp8Rows) widened first."""
    if isinstance(key, Fp8Rows):
        key, value = key.widened(query.dtype), value.widened(query.dtype)
    batch, heads, _, dim = query.shape
    kv = key.shape[1]
    if torch.compiler.is_compiling():
        end = key.shape[2]
    else:
        end = int(span.bounds[1])
    mask = span.mask[:, None, None, :end].bool()
    out = torch.nn.functional.scaled_dot_product_attention(
        query.reshape(batch, kv, heads // kv, dim), key[:, :, :end], value[:, :, :end], attn_mask=mask, scale=scale)
    return out.reshape(batch, 1, heads, dim).to(query.dtype)


def filled_decode_attention(query, key, value, span: DecodeSpan, scale: float) -> torch.Tensor:
    """query (batch, heads, 1, dim), key/value (batch, kv heads, cache, dim), or both fp8_cache.Fp8Rows ->
    (batch, 1, heads, dim)."""
    if query.is_cuda and triton is not None:
        key_scales = value_scales = None
        if isinstance(key, Fp8Rows):
            (key, key_scales), (value, value_scales) = key, value
        return torch.ops.salon.filled_decode_attention(query, key, value, span.mask, span.bounds, span.slots,
                                                      span.kv_row, scale, key_scales, value_scales)
    return reference_attention(query, key, value, span, scale)


if triton is not None:

    @triton.jit
    def _tile_kernel(Q, K, V, KS, VS, Mask, Bounds, Slots, KvRow, O, Mx, Sm,
                     stride_qb, stride_qh, stride_kb, stride_kh, stride_kl, stride_vb, stride_vh, stride_vl,
                     stride_sb, stride_sh, stride_mb, stride_ob, stride_oh, stride_os, stride_xb, stride_xh, rows,
                     slices, scale, G: tl.constexpr, R: tl.constexpr, M: tl.constexpr, D: tl.constexpr,
                     BLOCK: tl.constexpr, SLICE: tl.constexpr, IEEE: tl.constexpr, FP8: tl.constexpr):
        t = tl.program_id(0)  # the tile (DecodeSpan: tiles [0, rows) a row's new positions, then the prompts')
        h = tl.program_id(1)
        s = tl.program_id(2)
        begin = tl.load(Bounds)
        end = tl.load(Bounds + 1)
        prompt_end = tl.load(Bounds + 2)
        prompt = t >= rows
        # slices count from the start of the tile's part (the prompt's, or the row's new positions), so the
        # positions read fill the fewest programs, and each program that serves no row or reads nothing
        # returns at once: most of the grid is such, and its loads and stores were a fixed cost every layer
        first = tl.where(prompt, begin, prompt_end)
        lo = first + s * SLICE
        hi = tl.minimum(lo + SLICE, tl.where(prompt, prompt_end, end))
        if (lo >= hi) | (tl.load(Slots + t * R) < 0):
            return
        offs_m = tl.arange(0, M)  # query row m: the tile's slot m // G, the KV head's query head m % G
        slot = offs_m // G
        row = tl.load(Slots + t * R + slot, mask=slot < R, other=-1)
        live = row >= 0
        row = tl.where(live, row, 0)
        heads = h * G + offs_m % G
        offs_d = tl.arange(0, D)
        q = tl.load(Q + row[:, None] * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                    mask=live[:, None], other=0.0)
        kv_row = tl.load(KvRow + t)
        m_i = tl.full([M], float("-inf"), tl.float32)
        l_i = tl.zeros([M], tl.float32)
        acc = tl.zeros([M, D], tl.float32)
        for start in range(lo, hi, BLOCK):
            offs_n = start + tl.arange(0, BLOCK)
            inside = offs_n < hi
            # the mask of the row the keys come from: the tile's rows share it over the prompt (one prompt,
            # one left padding), and a row's own tile is that row
            keep = inside & (tl.load(Mask + kv_row * stride_mb + offs_n, mask=inside, other=0) != 0)
            k = tl.load(K + kv_row * stride_kb + h * stride_kh + offs_n[:, None] * stride_kl + offs_d[None, :],
                        mask=inside[:, None], other=0.0)
            v = tl.load(V + kv_row * stride_vb + h * stride_vh + offs_n[:, None] * stride_vl + offs_d[None, :],
                        mask=inside[:, None], other=0.0)
            if FP8:  # float8 rows (fp8_cache.py) widened as read; each position's scales multiply its score and
                # its probability's share of the values, so no wider copy is made
                k, v = k.to(q.dtype), v.to(q.dtype)
                k_scale = tl.load(KS + kv_row * stride_sb + h * stride_sh + offs_n, mask=inside, other=0.0)
                v_scale = tl.load(VS + kv_row * stride_sb + h * stride_sh + offs_n, mask=inside, other=0.0)
            if IEEE:
                scores = tl.dot(q, tl.trans(k), input_precision="ieee")
            else:
                scores = tl.dot(q, tl.trans(k))
            if FP8:
                scores = scores * k_scale[None, :]
            scores = tl.where(live[:, None] & keep[None, :], scores * scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(scores, 1))
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.exp(m_i - m_use)
            p = tl.exp(scores - m_use[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            if FP8:
                p = p * v_scale[None, :]
            if IEEE:
                acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
            else:
                acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
        part = s + tl.where(prompt, 0, slices)  # a row's slices: its prompt's, then its own
        tl.store(O + row[:, None] * stride_ob + heads[:, None] * stride_oh + part * stride_os + offs_d[None, :], acc,
                 mask=live[:, None])
        tl.store(Mx + row * stride_xb + heads * stride_xh + part, m_i, mask=live)
        tl.store(Sm + row * stride_xb + heads * stride_xh + part, l_i, mask=live)

    @triton.jit
    def _merge_kernel(Part, Top, Total, O, Bounds, stride_pb, stride_ph, stride_ps, stride_tb, stride_th, stride_ob,
                      stride_oh, slices, SLICE: tl.constexpr, SP: tl.constexpr, D: tl.constexpr):
        # one program per (row, head): the slices' partial sums weighed by their log-sum-exp, written in
        # the output's dtype. One kernel per layer where torch ops took nine: inside a captured graph
        # each tiny kernel costs its launch gap, and 28 layers of nine were most of the card's idle time
        b = tl.program_id(0)
        h = tl.program_id(1)
        offs_s = tl.arange(0, SP)
        offs_d = tl.arange(0, D)
        begin = tl.load(Bounds)
        end = tl.load(Bounds + 1)
        prompt_end = tl.load(Bounds + 2)
        # the slices the tile kernel read (its others returned at once, storing nothing): the prompt's
        # [begin, prompt_end), then the row's own [prompt_end, end), each from its part's start
        own = offs_s >= slices
        start = tl.where(own, prompt_end + (offs_s - slices) * SLICE, begin + offs_s * SLICE)
        stored = (offs_s < 2 * slices) & (start < tl.where(own, end, prompt_end))
        top = tl.load(Top + b * stride_tb + h * stride_th + offs_s, mask=stored, other=float("-inf"))
        total = tl.load(Total + b * stride_tb + h * stride_th + offs_s, mask=stored, other=0.0)
        read = top != float("-inf")  # a slice whose positions were all masked (left padding) has no weight
        weight = tl.where(read, tl.exp(top - tl.max(top, 0)), 0.0)
        part = tl.load(Part + b * stride_pb + h * stride_ph + offs_s[:, None] * stride_ps + offs_d[None, :],
                       mask=read[:, None], other=0.0)
        out = tl.sum(part * weight[:, None], 0) / tl.sum(total * weight, 0)
        tl.store(O + b * stride_ob + h * stride_oh + offs_d, out.to(O.dtype.element_ty))

    def run_kernel(launch, query, key, value, mask, bounds, slots, kv_row, scale: float, block: int = BLOCK_N,
                   split: int = SPLIT, warps: int = NUM_WARPS, stages: int = NUM_STAGES, key_scales=None,
                   value_scales=None) -> torch.Tensor:
        """The tiles' slices, then their merge; `launch` is the tile kernel (wrapped for torch.compile, or
        not). block, split, warps, stages: the tile kernel's tiling (positions per inner step and per
        program, warps, software pipelining); benchmarks/probe_filled_attention.py times the choices on a
        card. key_scales and value_scales (batch, kv heads, cache): key and value are float8 rows
        (fp8_cache.py)."""
        batch, heads, _, dim = query.shape
        kv, length = key.shape[1], key.shape[2]
        groups, rows_per_tile = heads // kv, slots.shape[1]
        slices = triton.cdiv(length, split)
        q = query.reshape(batch, heads, dim)
        part = torch.empty((batch, heads, 2 * slices, dim), dtype=torch.float32, device=query.device)
        top = torch.empty((batch, heads, 2 * slices), dtype=torch.float32, device=query.device)
        total = torch.empty_like(top)
        fp8 = key_scales is not None
        if fp8:
            assert key_scales.stride() == value_scales.stride() and key_scales.stride(-1) == 1
        scales = (key_scales, value_scales) if fp8 else (top, top)  # unread without float8
        launch[(slots.shape[0], kv, slices)](
            q, key, value, *scales, mask, bounds, slots, kv_row, part, top, total,
            q.stride(0), q.stride(1), key.stride(0), key.stride(1), key.stride(2),
            value.stride(0), value.stride(1), value.stride(2), scales[0].stride(0), scales[0].stride(1),
            mask.stride(0), part.stride(0), part.stride(1), part.stride(2), top.stride(0), top.stride(1), batch,
            slices, scale, G=groups, R=rows_per_tile, M=max(16, triton.next_power_of_2(rows_per_tile * groups)),
            D=dim, BLOCK=block, SLICE=split, IEEE=query.dtype == torch.float32, FP8=fp8, num_warps=warps,
            num_stages=stages)
        out = torch.empty((batch, 1, heads, dim), dtype=query.dtype, device=query.device)
        _merge_kernel[(batch, heads)](part, top, total, out, bounds, part.stride(0), part.stride(1), part.stride(2),
                                      top.stride(0), top.stride(1), out.stride(0), out.stride(2), slices,
                                      SLICE=split, SP=max(2, triton.next_power_of_2(2 * slices)), D=dim, num_warps=4)
        return out

    # an opaque op for torch.compile: Triton compiles the kernel in this process at the first (eager)
    # call, and a CUDA graph captures its launch like any other kernel's
    @torch.library.custom_op("salon::filled_decode_attention", mutates_args=())
    def _filled_decode_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor,
                                 bounds: torch.Tensor, slots: torch.Tensor, kv_row: torch.Tensor, scale: float,
                                 key_scales: torch.Tensor | None = None,
                                 value_scales: torch.Tensor | None = None) -> torch.Tensor:
        return run_kernel(_tile_kernel, query, key, value, mask, bounds, slots, kv_row, scale,
                          split=split_for(query.shape[0]), key_scales=key_scales, value_scales=value_scales)

    @_filled_decode_attention.register_fake
    def _(query, key, value, mask, bounds, slots, kv_row, scale, key_scales=None, value_scales=None):
        batch, heads, _, dim = query.shape
        return query.new_empty((batch, 1, heads, dim))


def split_for(rows: int) -> int:
    """Positions per program for a decode of `rows` rows."""
    return FEW_ROWS_SPLIT if rows <= FEW_ROWS else SPLIT


def supported(query_heads: int, kv_heads: int, head_dim: int) -> bool:
    """Shapes the kernel takes: a power-of-two head dim of at least 16, whole groups."""
    return query_heads % kv_heads == 0 and head_dim >= 16 and head_dim == 2 ** int(math.log2(head_dim))


def bucket_keys(filled: int, length: int, chunk: int = KEY_CHUNK) -> int:
    """The positions a decode step attends under "buckets": `filled` rounded up to a multiple of
    `chunk`, at most the cache's `length`."""
    return min(-(-filled // chunk) * chunk, length)


def filled_applies(model) -> bool:
    """Attention over the filled part runs where every layer is full attention on grouped heads."""
    cfg = model.config.get_text_config(decoder=True)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return full_attention_only(model) and supported(cfg.num_attention_heads, cfg.num_key_value_heads, head_dim)


def buckets_applies(model) -> bool:
    """Buckets run where every layer is full attention through salon's attention (which cuts the keys
    at the mask's length; transformers' own would refuse a mask shorter than the cache)."""
    return full_attention_only(model) and model.config._attn_implementation == ATTENTION


def isolates_recompiles() -> bool:
    """This torch.compile can give each compiled function a dynamo cache of its own."""
    return "isolate_recompiles" in inspect.signature(torch.compile).parameters
