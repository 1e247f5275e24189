"""Pairwise VLM judge on a local transformers model (registry name "transformers").

    judge = TransformersPairwiseJudge(TransformersJudgeConfig(model="Qwen/Qwen2.5-VL-7B-Instruct"))
    verdicts = judge.judge(candidates, references)      # see verdict.py
    judge.judge_many([(candidates, references), ...])   # several groups, each its own draw, one batch
    judge.first_wins([(img_a, img_b), ...])             # P(first shown wins), per ordered pair

Loads any model `AutoModelForImageTextToText` loads, asks the prompt of prompt.py, and reads
P("A") vs P("B") from the answer logits (no text parsing). Every pair is shown in both orders.
Qwen-VL-family models run on the prefix-sharing path of vlm_shared.py (each image encoded once,
each first-shown prefix computed once; a reference's encoding and its prefix are kept between
calls, keyed by the hash of its pixels); others, or `sharing="off"`, run the stock processor +
forward pass in batches. bf16 on GPU, float32 on CPU. On CUDA each RMSNorm and each MLP's gated SiLU
runs as one kernel (fused_layers.py; `fused_layers=False`: transformers' own).
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Annotated, Literal, Sequence

from PIL import Image

from salon.judges.prompt import PAIRWISE_PROMPT, PairwisePrompt
from salon.judges.verdict import Reference, Verdict, as_rgb, verdict_from_orders
from salon.pool.errors import JudgeError
from salon.pool.field_checks import at_least, field_problems, raise_problems

log = logging.getLogger(__name__)

SHARING = ("auto", "on", "off")
DTYPES = ("auto", "bfloat16", "float16", "float32")


@dataclass
class TransformersJudgeConfig:
    model: str
    device: str = "auto"  # "auto": cuda when available, else cpu
    dtype: Literal[DTYPES] = "auto"  # "auto": bfloat16 on cuda, float32 on cpu
    attn_implementation: str = "sdpa"
    sharing: Literal[SHARING] = "auto"  # prefix sharing: "auto" uses it where the architecture supports it
    max_batch_tokens: Annotated[int, at_least(1)] = 32768  # tokens per forward pass (bounds activation memory)
    max_pixels: Annotated[int | None, at_least(28 * 28)] = None  # override the processor's image size bound
    reference_cache: Annotated[int, at_least(0)] = 512  # encoded reference images kept between calls
    # references' prompt prefixes (their LM key/value caches) kept between calls
    prefix_cache: Annotated[int, at_least(0)] = 64
    # on CUDA, each RMSNorm and each MLP's gated SiLU one kernel (fused_layers.py): the same answers
    fused_layers: bool = True

    def __post_init__(self):
        problems = field_problems(self)
        if not self.model:
            problems.append("model is empty: give a local folder or a Hub id")
        raise_problems("TransformersJudgeConfig", problems)


class TransformersPairwiseJudge:
    """A pairwise judge backed by a local image-text-to-text model."""

    def __init__(self, config: TransformersJudgeConfig | None = None, prompt: PairwisePrompt = PAIRWISE_PROMPT,
                 **kwargs):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        cfg = config or TransformersJudgeConfig(**kwargs)
        device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = cfg.dtype if cfg.dtype != "auto" else ("bfloat16" if device.startswith("cuda") else "float32")
        try:
            processor = AutoProcessor.from_pretrained(cfg.model)
            model = AutoModelForImageTextToText.from_pretrained(
                cfg.model, dtype=getattr(torch, dtype), attn_implementation=cfg.attn_implementation, use_kernels=False
            ).to(device).eval()
        except (OSError, ValueError, KeyError) as e:
            raise JudgeError(f"could not load judge model {cfg.model!r}: {e}. Give a local model folder, or a "
                             "Hub id that is in the local cache (the Hub may be unreachable)") from e
        self._setup(model, processor, cfg, prompt)

    @classmethod
    def from_loaded(cls, model, processor, config: TransformersJudgeConfig, prompt: PairwisePrompt = PAIRWISE_PROMPT):
        """Wrap a model and processor already in memory (a trainer's, a benchmark's); `config.model` names it."""
        judge = cls.__new__(cls)
        judge._setup(model.eval(), processor, config, prompt)
        return judge

    def _setup(self, model, processor, config: TransformersJudgeConfig, prompt: PairwisePrompt):
        self.config, self.model, self.processor, self.prompt = config, model, processor, prompt
        self.name = f"transformers:{config.model}"
        self.prompt_version = prompt.version
        if not hasattr(processor, "image_processor"):
            raise JudgeError(f"{config.model!r} has no image processor (AutoProcessor gave "
                             f"{type(processor).__name__}): it is not an image-text-to-text model")
        # preprocessing runs where the model runs (the torchvision backend resizes on the GPU),
        # so it stays off the CPU's critical path
        self._image_kwargs = {"device": str(model.device)} if model.device.type == "cuda" else {}
        if config.max_pixels is not None:
            size = dict(getattr(processor.image_processor, "size", None) or {})
            self._image_kwargs["size"] = {**size, "longest_edge": config.max_pixels}
        processor.tokenizer.padding_side = "left"  # the answer position is the last one
        from salon.judges.fused_layers import fuse_layers, unfuse_layers

        if config.fused_layers:  # a model given to from_loaded is the caller's: its forwards follow this config
            fused = fuse_layers(model)
            if fused:
                log.info("judge %s: %d RMSNorms and MLPs run fused", config.model, fused)
        else:
            unfuse_layers(model)
        self.answer_ids = self._answer_ids()
        self._runner = self._shared_runner() if config.sharing != "off" else None
        self._refs: OrderedDict = OrderedDict()  # image key -> its encoding
        self._ref_files: OrderedDict = OrderedDict()  # (path, size, mtime) -> (RGB image, image key)

    def _answer_ids(self) -> tuple[int, int]:
        ids = []
        for answer in self.prompt.answers:
            enc = self.processor.tokenizer(answer, add_special_tokens=False)["input_ids"]
            if len(enc) != 1:
                raise JudgeError(f"answer {answer!r} is {len(enc)} tokens for this tokenizer; the judge reads one "
                                 "token's logits: use a prompt whose answers are single tokens")
            ids.append(enc[0])
        return ids[0], ids[1]

    def _shared_runner(self):
        """The prefix-sharing runner when the model supports it and reproduces the processor's tokens."""
        from salon.judges.vlm_shared import SharedPlan, SharedRunner

        inner = getattr(self.model, "model", None)
        supported = all(hasattr(inner, a) for a in ("visual", "language_model", "get_image_features"))
        problem = None if supported else f"{type(self.model).__name__} is not a Qwen-VL-family model"
        if supported:
            try:
                plan = SharedPlan.build(self.processor, self.prompt.messages(), self.answer_ids)
                probe = [Image.new("RGB", (64, 48), "white"), Image.new("RGB", (40, 56), "black")]
                expect = self._stock_inputs([tuple(probe)])["input_ids"][0].tolist()
                grids = self.processor.image_processor(images=probe, return_tensors="pt",
                                                       **self._image_kwargs)["image_grid_thw"]
                merge = self.model.config.vision_config.spatial_merge_size
                n = [int(g.prod()) // merge**2 for g in grids]
                if plan.ids(*n) != expect:
                    problem = "the chat template's tokens around the images differ from the processor's"
            except (ValueError, AttributeError, KeyError) as e:
                problem = f"{type(e).__name__}: {e}"
        if problem:
            if self.config.sharing == "on":
                raise JudgeError(f"sharing='on' but prefix sharing cannot run: {problem}; use sharing='auto'")
            log.info("prefix sharing off for %s: %s", self.config.model, problem)
            return None
        return SharedRunner(self.model, plan, prefix_cache=self.config.prefix_cache)

    @property
    def sharing(self) -> bool:
        return self._runner is not None

    # ---- the Judge protocol -------------------------------------------------------------------
    def judge(self, candidates: Sequence[Image.Image], references: Sequence[Reference]) -> list[list[Verdict]]:
        return self.judge_many([(candidates, references)])[0]

    def judge_many(self, groups: Sequence[tuple[Sequence[Image.Image], Sequence[Reference]]]
                   ) -> list[list[list[Verdict]]]:
        """`judge` for several groups at once, each with references of its own: one batch of comparisons
        (a reference that several groups drew is read and encoded once)."""
        images, keys, failed, slot = [], [], {}, {}
        for candidates, _ in groups:
            images += list(candidates)
            keys += [None] * len(candidates)
        for _, references in groups:
            for r in references:
                if id(r) in slot:
                    continue
                slot[id(r)] = len(images)
                try:
                    image, key = self._reference(r)
                    images.append(image)
                    keys.append(key)
                except (OSError, ValueError, AttributeError) as e:
                    failed[len(images)] = f"could not read reference {r.id}: {e}"
                    images.append(None)
                    keys.append(None)
        comparisons, first = [], 0
        for candidates, references in groups:
            for i in range(first, first + len(candidates)):
                for r in references:
                    comparisons += [(i, slot[id(r)]), (slot[id(r)], i)]
            first += len(candidates)
        probs, reasons = self._first_wins_indexed(images, keys, comparisons, failed)
        out, k = [], 0
        for candidates, references in groups:
            rows = []
            for _ in candidates:
                row = []
                for ref in references:
                    row.append(verdict_from_orders(probs[k], probs[k + 1], reference=ref.id, judge=self.name,
                                                   prompt_version=self.prompt_version,
                                                   reason=reasons[k] or reasons[k + 1]))
                    k += 2
                rows.append(row)
            out.append(rows)
        return out

    def _reference(self, ref: Reference) -> tuple[Image.Image, str]:
        """A reference as RGB and its key. A file is decoded and hashed once while it stays the same file
        (path, size, mtime): a training step judges its groups against the same few references, and the
        decode, the alpha flattening and the hash cost the judge's thread ~30 ms a reference a call,
        on CPUs the renderer keeps busy."""
        if ref.image is not None or ref.path is None:
            image = as_rgb(ref.load())
            return image, image_key(image)
        st = os.stat(ref.path)
        file = (str(ref.path), st.st_size, st.st_mtime_ns)
        hit = self._ref_files.get(file)
        if hit is None:
            image = as_rgb(ref.load())
            hit = self._ref_files[file] = (image, image_key(image))
            while len(self._ref_files) > max(self.config.reference_cache, 1):
                self._ref_files.popitem(last=False)
        self._ref_files.move_to_end(file)
        return hit

    def first_wins(self, pairs: Sequence[tuple[Image.Image, Image.Image]]) -> list[float | None]:
        """P(first shown wins) for ordered pairs, as one batch (no order averaging)."""
        images = [im for pair in pairs for im in pair]
        comparisons = [(2 * i, 2 * i + 1) for i in range(len(pairs))]
        probs, _ = self._first_wins_indexed(images, [None] * len(images), comparisons, {})
        return probs

    # ---- internals ----------------------------------------------------------------------------
    def _first_wins_indexed(self, images, keys, comparisons, failed):
        """P(first wins) per (a, b) index pair; a failed image or pass gives None with a reason."""
        images = list(images)
        for idx, im in enumerate(images):
            if idx in failed:
                continue
            try:
                images[idx] = as_rgb(im)
                if min(images[idx].size) < 1:
                    raise ValueError(f"empty image {images[idx].size}")
            except (OSError, ValueError, AttributeError) as e:
                failed[idx] = f"could not read image: {e}"
        probs: list[float | None] = [None] * len(comparisons)
        reasons: list[str | None] = [None] * len(comparisons)
        todo = []
        for c, (a, b) in enumerate(comparisons):
            bad = failed.get(a) or failed.get(b)
            if bad:
                reasons[c] = bad
            else:
                todo.append(c)
        if not todo:
            return probs, reasons
        import torch

        try:
            if self._runner is not None:
                values = self._shared(images, keys, [comparisons[c] for c in todo])
            else:
                values = self._stock([(images[comparisons[c][0]], images[comparisons[c][1]]) for c in todo])
        except (RuntimeError, ValueError, torch.cuda.OutOfMemoryError) as e:
            # infrastructure failure (e.g. out of memory): missing, never a bad painting
            log.warning("judge forward failed: %s", e)
            for c in todo:
                reasons[c] = f"judge failed: {type(e).__name__}: {e}"
            return probs, reasons
        for c, v in zip(todo, values):
            probs[c] = v
        return probs, reasons

    def _encode(self, images, keys, needed):
        """Encode each needed image once; references (keyed) come from / go to an LRU cache."""
        encoded, fresh = {}, []
        for idx in needed:
            key = keys[idx]
            if key is not None and key in self._refs:
                self._refs.move_to_end(key)
                encoded[idx] = self._refs[key]
            else:
                fresh.append(idx)
        if fresh:
            batch = self.processor.image_processor(images=[images[i] for i in fresh], return_tensors="pt",
                                                  **self._image_kwargs)
            grids = batch["image_grid_thw"]
            sizes = grids.prod(-1).tolist()
            pixel = list(batch["pixel_values"].split(sizes))
            for idx, enc in zip(fresh, self._encode_chunked(pixel, list(grids.split(1)))):
                encoded[idx] = enc
                if keys[idx] is not None and self.config.reference_cache:
                    self._refs[keys[idx]] = enc
                    while len(self._refs) > self.config.reference_cache:
                        self._refs.popitem(last=False)
        return encoded

    def _encode_chunked(self, pixel, grids):
        # the vision tower's activations scale with patches: bound them like the LM's tokens
        out, chunk, used = [], [], 0
        budget = 4 * self.config.max_batch_tokens
        for pv, g in zip(pixel, grids):
            if chunk and used + pv.shape[0] > budget:
                out += self._runner.encode([p for p, _ in chunk], [g for _, g in chunk])
                chunk, used = [], 0
            chunk.append((pv, g))
            used += pv.shape[0]
        if chunk:
            out += self._runner.encode([p for p, _ in chunk], [g for _, g in chunk])
        return out

    def _shared(self, images, keys, comparisons):
        needed = sorted({i for pair in comparisons for i in pair})
        encoded = self._encode(images, keys, needed)
        slot = {idx: k for k, idx in enumerate(needed)}
        enc_list = [encoded[idx] for idx in needed]
        return self._runner.first_wins(enc_list, [(slot[a], slot[b]) for a, b in comparisons],
                                       self.config.max_batch_tokens, [keys[idx] for idx in needed])

    def _stock_inputs(self, pairs):
        text = self.processor.apply_chat_template(self.prompt.messages(), add_generation_prompt=True,
                                                  tokenize=False)
        return self.processor(text=[text] * len(pairs), images=[im for p in pairs for im in p],
                              return_tensors="pt", padding=True, **self._image_kwargs)

    def _stock(self, pairs):
        """The plain path: processor + full forward pass, batched by token count."""
        import torch

        out: list[float] = []
        per_pair = None
        start = 0
        while start < len(pairs):
            size = 1 if per_pair is None else max(1, self.config.max_batch_tokens // per_pair)
            chunk = pairs[start:start + size]
            batch = self._stock_inputs(chunk).to(self.model.device)
            per_pair = batch["input_ids"].shape[1]
            with torch.inference_mode():
                logits = self.model(**batch, logits_to_keep=1).logits[:, -1]
            p = torch.softmax(logits[:, list(self.answer_ids)].float(), dim=-1)[:, 0]
            out += p.tolist()
            start += size
        return out


def image_key(image: Image.Image) -> str:
    """A reference's cache key: the hash of its pixels (the same painting under any id or path)."""
    import hashlib

    rgb = as_rgb(image)
    return hashlib.sha256(f"{rgb.size}".encode() + rgb.tobytes()).hexdigest()
