"""Prefix-sharing forward passes for Qwen-VL-family judges (Qwen2-VL, Qwen2.5-VL, Qwen3-VL).

A pairwise comparison is the token sequence

    T0 + IMAGE(first) + T1 + IMAGE(second) + T2        (T2 ends with the assistant header)

and we only need the answer logits at its last position. For a GRPO group (8 candidates x 4
references x 2 orders = 64 comparisons) only 12 images are distinct, and every comparison shares
its prefix T0 + IMAGE(first) with the others that show the same image first. So:

1. each distinct image goes through the vision tower once (`encode`; references can be cached);
2. each distinct prefix runs through the language model once, keeping its key/value cache (a
   reference's prefix is the same in every call: kept between calls, keyed by the image's hash);
3. the suffixes T1 + IMAGE(second) + T2 of all comparisons run batched on the gathered caches;
4. only the two answer rows of the LM head are applied, to the last real position only.

The vision tower's side (windows batched by length, the grids' derived inputs made on the host
without waiting for the card) is vlm_vision.py.

This computes the same function as the stock forward pass on the full sequence (the M-RoPE
positions are rebuilt here exactly as `get_rope_index` builds them for images; a self-check in
`SharedPlan.build` compares the token ids with the processor's). Used by vlm_transformers.py.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from salon.judges.vlm_vision import VisionPlans, to_device, use_bucketed_vision_attention


@dataclass
class Encoded:
    """One image after the vision tower: LM-ready embeddings, merged grid, optional deepstack."""

    embeds: torch.Tensor  # [n_tokens, hidden]
    grid: tuple[int, int, int]  # (t, h, w) in merged units: n_tokens = t*h*w
    deepstack: list[torch.Tensor] | None = None  # per deepstack layer: [n_tokens, hidden] (Qwen3-VL)


@dataclass
class SharedPlan:
    """Token segments of the prompt around the two image slots, taken from the chat template."""

    t0: list[int]
    t1: list[int]
    t2: list[int]
    image_token_id: int
    answer_ids: tuple[int, int]

    @classmethod
    def build(cls, processor, messages: list[dict], answer_ids: tuple[int, int]) -> "SharedPlan":
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        parts = text.split(processor.image_token)
        if len(parts) != 3:
            raise ValueError(f"chat template produced {len(parts) - 1} image slots, expected 2")
        tok = processor.tokenizer
        t0, t1, t2 = (tok(p, add_special_tokens=False)["input_ids"] for p in parts)
        return cls(t0, t1, t2, processor.image_token_id, answer_ids)

    def ids(self, n_first: int, n_second: int) -> list[int]:
        img = self.image_token_id
        return self.t0 + [img] * n_first + self.t1 + [img] * n_second + self.t2


def _segments_positions(segments, start: int) -> tuple[torch.Tensor, int]:
    """3-row M-RoPE positions for a list of ('text', n) / ('image', (t, h, w)) segments."""
    rows, pos = [], start
    for kind, what in segments:
        if kind == "text":
            rows.append(torch.arange(pos, pos + what).view(1, -1).expand(3, -1))
            pos += what
        else:
            t, h, w = what
            tt, hh, ww = torch.meshgrid(torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij")
            rows.append(torch.stack([tt, hh, ww]).reshape(3, -1) + pos)
            pos += max(h, w)  # as get_rope_index: next text starts after the larger side
    return torch.cat(rows, dim=1), pos


class SharedRunner:
    """Runs prefix-shared comparisons on a loaded Qwen-VL-family `...ForConditionalGeneration`."""

    def __init__(self, model, plan: SharedPlan, prefix_cache: int = 0):
        self.model = model
        self.plan = plan
        inner = model.model
        self.visual = inner.visual
        self.lm = inner.language_model
        self.embed = inner.get_input_embeddings()
        self.merge = model.config.vision_config.spatial_merge_size
        params = inspect.signature(self.lm.forward).parameters
        # transformers renamed past_key_values -> cache (5.2x); accept either
        self.cache_kw = "cache" if "cache" in params else "past_key_values"
        self.deepstack = "deepstack_visual_embeds" in params
        head = model.get_output_embeddings().weight
        self.head = head[list(plan.answer_ids)].detach().float()  # [2, hidden]
        self.bucketed_vision = use_bucketed_vision_attention(model)
        self.vision_plans = VisionPlans(self.visual)
        self._text_cache: dict[tuple[int, ...], torch.Tensor] = {}
        self.prefix_cache = prefix_cache
        self.prefixes: OrderedDict = OrderedDict()  # key -> (per-layer (keys, values), mask, next position)

    @property
    def device(self):
        return self.embed.weight.device

    def _text(self, ids: list[int]) -> torch.Tensor:
        # the template segments are the same for every comparison: embed each once
        key = tuple(ids)
        if key not in self._text_cache:
            self._text_cache[key] = self.embed(torch.tensor(ids, device=self.device))
        return self._text_cache[key]

    @torch.inference_mode()
    def encode(self, pixel_values: list[torch.Tensor], grids: list[torch.Tensor]) -> list[Encoded]:
        """Vision tower over several images at once (one call; images are independent inside it)."""
        pv = torch.cat(pixel_values).to(self.device, self.visual.dtype)
        host_thw = torch.cat(grids).cpu()  # sizes and grids read here, not from the card (no wait for it)
        thw = to_device(host_thw, self.device)
        with self.vision_plans.inputs(host_thw, self.device) as planned:
            out = self.model.model.get_image_features(pv, thw, return_dict=True, **planned)
        sizes = (host_thw.prod(-1) // self.merge**2).tolist()
        embeds = _per_image(getattr(out, "pooler_output", out), sizes)
        # Qwen3-VL's deepstack features come back split per image from transformers 5.24 on, and as
        # one tensor per layer (all images' tokens concatenated) before: split them the same way
        deep = [_per_image(layer, sizes) for layer in getattr(out, "deepstack_features", None) or []]
        result = []
        for i, e in enumerate(embeds):
            t, h, w = (int(x) for x in host_thw[i])
            ds = [layer[i] for layer in deep] if deep else None
            result.append(Encoded(e, (t, h // self.merge, w // self.merge), ds))
        return result

    def _embed_rows(self, rows):
        """rows: list of [(ids, Encoded|None)] segment lists -> padded embeds, mask, positions, deepstack."""
        lengths = [sum(len(ids) for ids, _ in segs) for segs, _ in rows]
        width = max(lengths)
        hidden = self.embed.weight.shape[1]
        embeds = torch.zeros(len(rows), width, hidden, device=self.device, dtype=self.embed.weight.dtype)
        mask = torch.zeros(len(rows), width, dtype=torch.long, device=self.device)
        positions = torch.zeros(3, len(rows), width, dtype=torch.long)
        visual = torch.zeros(len(rows), width, dtype=torch.bool, device=self.device)
        deep_rows, ends = [], []
        for b, ((segs, start), n) in enumerate(zip(rows, lengths)):
            off, pos_segs = 0, []
            for ids, enc in segs:
                if enc is None:
                    embeds[b, off:off + len(ids)] = self._text(ids)
                    pos_segs.append(("text", len(ids)))
                else:
                    embeds[b, off:off + len(ids)] = enc.embeds.to(embeds.dtype)
                    visual[b, off:off + len(ids)] = True
                    pos_segs.append(("image", enc.grid))
                    if enc.deepstack is not None:
                        deep_rows.append(enc.deepstack)
                off += len(ids)
            pos, end = _segments_positions(pos_segs, start)
            positions[:, b, :n] = pos
            mask[b, :n] = 1
            ends.append(end)
        deep = None
        if deep_rows and self.deepstack:
            deep = [torch.cat([r[k] for r in deep_rows]).to(embeds.dtype) for k in range(len(deep_rows[0]))]
        return embeds, mask, to_device(positions, self.device), visual, deep, lengths, ends

    def _lm(self, embeds, mask, positions, visual, deep, cache, padded: bool):
        """`padded`: whether any row has a masked position (known on the host: asking the mask would wait
        for the card)."""
        kwargs = {"inputs_embeds": embeds, "position_ids": positions, "use_cache": True, self.cache_kw: cache,
                  "attention_mask": mask if padded else None}
        if deep is not None:
            kwargs.update(visual_pos_masks=visual, deepstack_visual_embeds=deep)
        return self.lm(**kwargs).last_hidden_state

    @torch.inference_mode()
    def first_wins(self, encoded: list[Encoded], comparisons: list[tuple[int, int]],
                   max_batch_tokens: int, keys: list | None = None) -> list[float]:
        """P(first shown wins) for each (first, second) index pair into `encoded`. An image with a key
        (a reference's content hash) keeps its prefix's key/value cache between calls (`prefixes`)."""
        plan = self.plan
        firsts = sorted({a for a, _ in comparisons})
        slot = {a: i for i, a in enumerate(firsts)}
        keys = keys or [None] * len(encoded)
        # 1. prefixes T0 + IMAGE(first), in token-bounded chunks, caches kept per prefix (each cut to its
        #    own length, so a prefix is the same whichever chunk computed it)
        prefix: dict[int, tuple] = {}
        for a in firsts:
            if keys[a] is not None and keys[a] in self.prefixes:
                self.prefixes.move_to_end(keys[a])
                prefix[a] = self.prefixes[keys[a]]
        todo = [a for a in firsts if a not in prefix]
        for chunk in _chunks(todo, lambda a: len(plan.t0) + encoded[a].embeds.shape[0], max_batch_tokens):
            rows = [([(plan.t0, None), ([plan.image_token_id] * encoded[a].embeds.shape[0], encoded[a])], 0)
                    for a in chunk]
            embeds, mask, positions, visual, deep, lengths, ends = self._embed_rows(rows)
            cache = DynamicCache()
            self._lm(embeds, mask, positions, visual, deep, cache, padded=min(lengths) < max(lengths))
            kv = [(layer.keys, layer.values) for layer in cache.layers]
            for i, a in enumerate(chunk):
                n = lengths[i]
                prefix[a] = ([(k[i, :, :n], v[i, :, :n]) for k, v in kv], mask[i, :n], ends[i])
                if keys[a] is not None and self.prefix_cache:
                    prefix[a] = ([(k.clone(), v.clone()) for k, v in prefix[a][0]], prefix[a][1].clone(), ends[i])
                    self.prefixes[keys[a]] = prefix[a]
                    while len(self.prefixes) > self.prefix_cache:
                        self.prefixes.popitem(last=False)
        pre_kv = [prefix[a][0] for a in firsts]
        pre_mask = [prefix[a][1] for a in firsts]
        pre_end = [prefix[a][2] for a in firsts]
        # 2. suffixes T1 + IMAGE(second) + T2 on the gathered prefix caches; nothing here waits for the
        #    card until the last chunk is queued (the answers are read once, at the end), so the host
        #    builds a chunk while the card computes the one before
        chunk_probs, chunk_order = [], []
        order = list(range(len(comparisons)))
        suffix_len = len(plan.t1) + len(plan.t2)
        for chunk in _chunks(order, lambda c: suffix_len + encoded[comparisons[c][1]].embeds.shape[0]
                             + encoded[comparisons[c][0]].embeds.shape[0], max_batch_tokens):
            pre = [slot[comparisons[c][0]] for c in chunk]
            rows = []
            for c in chunk:
                second = encoded[comparisons[c][1]]
                rows.append(([(plan.t1, None), ([plan.image_token_id] * second.embeds.shape[0], second),
                              (plan.t2, None)], pre_end[slot[comparisons[c][0]]]))
            embeds, mask, positions, visual, deep, lengths, _ = self._embed_rows(rows)
            width = max(pre_mask[p].shape[0] for p in pre)
            kv_rows = []
            for layer in range(len(pre_kv[0])):
                ks = [_pad_to(pre_kv[p][layer][0], width) for p in pre]
                vs = [_pad_to(pre_kv[p][layer][1], width) for p in pre]
                kv_rows.append((torch.stack(ks), torch.stack(vs)))
            prefix_mask = torch.stack([_pad_to(pre_mask[p], width, dim=0) for p in pre])
            full_mask = torch.cat([prefix_mask, mask], dim=1)
            padded = min(pre_mask[p].shape[0] for p in pre) < width or min(lengths) < max(lengths)
            hidden = self._lm(embeds, full_mask, positions, visual, deep, DynamicCache(kv_rows), padded)
            last = hidden[torch.arange(len(chunk), device=hidden.device),
                          to_device(torch.tensor(lengths) - 1, hidden.device)]
            logits = last.float() @ self.head.T
            chunk_probs.append(torch.softmax(logits, dim=-1)[:, 0])
            chunk_order += chunk
        probs = [0.0] * len(comparisons)
        for c, value in zip(chunk_order, torch.cat(chunk_probs).tolist() if chunk_probs else []):
            probs[c] = value
        return probs


def _per_image(features, sizes: list[int]) -> list[torch.Tensor]:
    """One [tokens, hidden] tensor per image, whether transformers split them already or not."""
    if isinstance(features, torch.Tensor):
        return list(torch.split(features, sizes))
    features = list(features)
    if [f.shape[0] for f in features] != sizes:
        raise ValueError(f"vision tower returned {[f.shape[0] for f in features]} tokens per image, "
                         f"expected {sizes}")
    return features


def _pad_to(t: torch.Tensor, width: int, dim: int = 1) -> torch.Tensor:
    """Right-pad a per-row tensor along its sequence dim (keys/values: [heads, seq, hd]; mask: [seq])."""
    missing = width - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([t, t.new_zeros(shape)], dim=dim)


def _chunks(items, cost, budget):
    """Greedy chunks of `items` whose summed cost stays under `budget` (at least one item each)."""
    chunk, used = [], 0
    for item in items:
        c = cost(item)
        if chunk and used + c > budget:
            yield chunk
            chunk, used = [], 0
        chunk.append(item)
        used += c
    if chunk:
        yield chunk
