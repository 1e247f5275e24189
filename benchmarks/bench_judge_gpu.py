"""GPU benchmark of the pairwise VLM judge on a randomly initialised Qwen2.5-VL-7B-shaped model.

    python benchmarks/bench_judge_gpu.py [--out DIR]      (on a CUDA machine; no Hub, no weights)

Builds Qwen2.5-VL-7B from its config values (written below; random bf16 weights: the compute is
the same as the real model's) and a stand-in BPE tokenizer with the judges' chat template, then
times, side by side in one run, for 600x600 paintings:

  * stock:  the processor + the plain Auto-class forward, one comparison per forward pass, and
            batched (sharing="off" in TransformersPairwiseJudge);
  * salon:  the prefix-sharing path (each distinct image through the vision tower once, each
            first-shown prefix once, suffixes batched on its KV cache), one comparison per
            forward pass and batched, with reference encodings cold and cached, and its best
            batching again on transformers' own RMSNorm and MLP forwards (fused_layers=False);

on a GRPO group: 8 paintings x 4 references x 2 orders = 64 comparisons. It also measures the
card's bf16 matmul rate and reports the fraction of it each path reaches (FLOPs counted from the
tokens and parameters), and the largest |p_shared - p_stock| on the same pairs. Results go to
DIR/bench_judge_gpu.json and a table on stdout.

`--precision-check` instead builds the model in float32 and compares the shared path with the
stock forward there (they must agree to float32 rounding), then in bf16, next to the stock path's
own batch-1 vs batch-8 difference (bf16's noise floor): DIR/bench_judge_precision.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

REPO = Path(__file__).resolve().parents[1]

# Qwen2.5-VL-7B's text and vision towers (salon.models.shapes), copied in main() once salon imports
TEXT: dict = {}
VISION: dict = {}


def import_salon():
    """Make `salon.judges` importable from a bare checkout (the device machine has no install)."""
    try:
        import salon.judges  # noqa: F401
    except ImportError:
        ns = Path(tempfile.mkdtemp()) / "salon"
        ns.mkdir()
        for pkg in ("judges", "pool", "train"):
            (ns / pkg).symlink_to(REPO / pkg)
        sys.path.insert(0, str(ns.parent))


def use_shapes(tiny: bool = False) -> None:
    """Fill TEXT and VISION with Qwen2.5-VL-7B's shapes (salon.models.shapes), or a tiny model's (CPU checks)."""
    from salon.models.shapes import QWEN2_5_VL_7B_TEXT, QWEN2_5_VL_7B_VISION

    TEXT.update(QWEN2_5_VL_7B_TEXT)
    VISION.update(QWEN2_5_VL_7B_VISION)
    if tiny:
        TEXT.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3],
                                                            "rope_theta": 1e6})
        VISION.update(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=64,
                      fullatt_block_indexes=[1])


def build(device="cuda", dtype=torch.bfloat16):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (PreTrainedTokenizerFast, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration,
                              Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor)

    from salon.judges.prompt import PAIRWISE_PROMPT
    from salon.models.tokenizer import CHAT_TEMPLATE, SPECIALS

    # word-level-ish merges on the prompt's own words, so its text costs about what Qwen's BPE charges
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [PAIRWISE_PROMPT.intro, PAIRWISE_PROMPT.between, PAIRWISE_PROMPT.question, "user assistant system"]
    tok.train_from_iterator(corpus * 50, trainers.BpeTrainer(vocab_size=1200, special_tokens=SPECIALS,
                                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        additional_special_tokens=SPECIALS[1:], chat_template=CHAT_TEMPLATE)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}
    cfg = Qwen2_5_VLConfig(text_config=dict(TEXT, bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"]),
                           vision_config=VISION, image_token_id=ids["<|image_pad|>"],
                           video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                           vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=False)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration._from_config(cfg, dtype=dtype,
                                                                attn_implementation="sdpa").eval()
    processor = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(), tokenizer=tokenizer,
                                    video_processor=Qwen2VLVideoProcessor(), chat_template=CHAT_TEMPLATE)
    return model, processor


def paintings(n, seed, size=600):
    """Smooth random colour fields: painting-like statistics for the preprocessor."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        small = rng.integers(0, 255, (6, 6, 3), dtype=np.uint8)
        img = Image.fromarray(small).resize((size, size), Image.BICUBIC)
        noise = rng.normal(0, 6, (size, size, 3))
        out.append(Image.fromarray(np.clip(np.asarray(img) + noise, 0, 255).astype(np.uint8)))
    return out


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn, reps, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def matmul_peak(device, n=8192):
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    t, _ = timed(lambda: a @ b, reps=10, warmup=3)
    return 2 * n**3 / t


def linear_params(module):
    return sum(m.weight.numel() for m in module.modules() if isinstance(m, torch.nn.Linear))


def group_flops(model, plan, n_img, n_first, n_cmp, images, shared):
    """Matmul FLOPs of one group: linear layers 2*P per token, attention 4*d per (query, key) pair."""
    lm = model.model.language_model
    p_lm = linear_params(lm)
    d = TEXT["num_attention_heads"] * (TEXT["hidden_size"] // TEXT["num_attention_heads"])
    layers = TEXT["num_hidden_layers"]
    pre = len(plan.t0) + n_img
    suf = len(plan.t1) + n_img + len(plan.t2)
    if shared:
        tokens = n_first * pre + n_cmp * suf
        attn_pairs = n_first * pre * pre / 2 + n_cmp * suf * (pre + suf / 2)
    else:
        tokens = n_cmp * (pre + suf)
        attn_pairs = n_cmp * (pre + suf) ** 2 / 2
    patches = images * n_img * 4
    vis = model.model.visual
    full = len(VISION["fullatt_block_indexes"])
    vis_attn = images * (full * (n_img * 4) ** 2 + (VISION["depth"] - full) * (n_img * 4) * 64) * 4 * VISION["hidden_size"]
    return dict(lm=2 * p_lm * tokens + 4 * d * layers * attn_pairs, vision=2 * linear_params(vis) * patches + vis_attn,
                lm_tokens=tokens)


def precision_check(out: Path, device: str):
    from salon.judges.vlm_transformers import TransformersJudgeConfig, TransformersPairwiseJudge

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, processor = build(device, torch.float32)
    imgs = paintings(12, seed=2)
    pairs = [(imgs[i], imgs[8 + i % 4]) for i in range(8)]

    def probs(sharing, tokens):
        if sharing == "off":
            model.model.visual.config._attn_implementation = "sdpa"  # undo a sharing judge's switch
        j = TransformersPairwiseJudge.from_loaded(model, processor, TransformersJudgeConfig(
            model="random-Qwen2.5-VL-7B", sharing=sharing, max_batch_tokens=tokens))
        return np.array(j.first_wins(pairs))

    res = {}
    stock32, shared32 = probs("off", 1), probs("on", 65536)
    res["float32_max_abs_diff_shared_vs_stock"] = float(np.abs(stock32 - shared32).max())
    model.to(torch.bfloat16)
    stock1, stock8, shared16 = probs("off", 1), probs("off", 8 * 1000), probs("on", 65536)
    res["bf16_max_abs_diff_stock_batch1_vs_batch8"] = float(np.abs(stock1 - stock8).max())
    res["bf16_max_abs_diff_shared_vs_stock"] = float(np.abs(shared16 - stock1).max())
    res["bf16_vs_float32_max_abs_diff_stock"] = float(np.abs(stock1 - stock32).max())
    res["p_float32_stock"] = stock32.tolist()
    res["p_bf16_shared"] = shared16.tolist()
    print(json.dumps(res, indent=1), flush=True)
    (out / "bench_judge_precision.json").write_text(json.dumps(res, indent=2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--tiny", action="store_true", help="CPU smoke run of this script with a tiny model")
    ap.add_argument("--precision-check", action="store_true", help="float32 vs bf16 agreement instead of timing")
    args = ap.parse_args()
    device = "cpu" if args.tiny else "cuda"
    import_salon()
    use_shapes(tiny=args.tiny)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.precision_check:
        return precision_check(Path(args.out), device)
    from salon.judges.verdict import Reference
    from salon.judges.vlm_transformers import TransformersJudgeConfig, TransformersPairwiseJudge

    res = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__}
    import transformers
    res["transformers"] = transformers.__version__
    peak = matmul_peak(device, 8192 if device == "cuda" else 512)
    res["bf16_matmul_tflops"] = peak / 1e12
    print(f"bf16 8192^3 matmul: {peak / 1e12:.0f} TFLOP/s", flush=True)
    t = time.perf_counter()
    model, processor = build(device)
    print(f"built model in {time.perf_counter() - t:.1f}s", flush=True)

    def judge(sharing, tokens, fused=True):  # the model's forwards follow the judge made last (fused_layers)
        return TransformersPairwiseJudge.from_loaded(model, processor, TransformersJudgeConfig(
            model="random-Qwen2.5-VL-7B", sharing=sharing, max_batch_tokens=tokens, device=device,
            fused_layers=fused))

    imgs = paintings(12, seed=1)
    cands, refs = imgs[:8], [Reference.from_image(im, id=f"ref{i}") for i, im in enumerate(imgs[8:])]
    rows = {}

    def record(name, seconds, n_cmp, flops=None):
        r = {"seconds": seconds, "comparisons_per_s": n_cmp / seconds, "comparisons": n_cmp}
        if flops:
            r["tflops"] = (flops["lm"] + flops["vision"]) / seconds / 1e12
            r["fraction_of_bf16_peak"] = (flops["lm"] + flops["vision"]) / seconds / peak
            r["lm_tokens"] = flops["lm_tokens"]
        rows[name] = r
        print(f"{name:42s} {seconds:8.3f}s {n_cmp / seconds:8.1f} cmp/s "
              f"{r.get('fraction_of_bf16_peak', float('nan')):6.1%} of peak", flush=True)

    # stock first: a sharing judge switches the (shared) vision tower to bucketed attention
    pairs = [(cands[i], refs[j].image) for i in range(8) for j in range(4)][:8]
    stock1 = judge("off", 1, fused=False)  # stock: transformers' processor, forward and layers
    p_stock = np.array(stock1.first_wins(pairs))
    n_img = int(processor.image_processor(images=[cands[0]], return_tensors="pt")["image_grid_thw"].prod()) // 4
    res["image_tokens"] = n_img
    sec, _ = timed(lambda: stock1.first_wins(pairs[:1]), reps=6, warmup=2)
    rows["_stock1"] = sec
    stock_groups = {}
    for bs in (16, 64):
        try:
            stock = judge("off", bs * (2 * n_img + 100), fused=False)
            stock_groups[bs], _ = timed(lambda: stock.judge(cands, refs), reps=2, warmup=1)
        except torch.cuda.OutOfMemoryError as e:
            rows[f"stock, batches of {bs}"] = {"error": str(e)[:200]}
            torch.cuda.empty_cache()

    fast = judge("on", 65536)
    plan = fast._runner.plan
    res["tokens_per_comparison"] = len(plan.t0) + len(plan.t1) + len(plan.t2) + 2 * n_img
    print(f"{n_img} tokens per image, {res['tokens_per_comparison']} per comparison", flush=True)
    # correctness: the shared path against the stock forward on the same pairs (bf16 both)
    p_fast = np.array(fast.first_wins(pairs))
    res["max_abs_p_diff_shared_vs_stock"] = float(np.abs(p_fast - p_stock).max())
    print(f"max |p_shared - p_stock| over {len(pairs)} pairs: {res['max_abs_p_diff_shared_vs_stock']:.4f}", flush=True)

    f_stock = group_flops(model, plan, n_img, 8, 64, images=128, shared=False)
    f_fast = group_flops(model, plan, n_img, 12, 64, images=12, shared=True)
    f_one = {k: v / 64 for k, v in f_stock.items()}
    record("stock, 1 comparison per forward", rows.pop("_stock1"), 1, f_one)
    for bs, sec in stock_groups.items():
        record(f"stock, batches of {bs}, group of 64", sec, 64, f_stock)
    one = judge("on", 1)  # every prefix and every suffix its own forward pass

    def cold(j):
        def run():
            j._refs.clear()
            return j.judge(cands, refs)
        return run

    sec, _ = timed(cold(one), reps=2, warmup=1)
    record("salon shared, 1 comparison per forward", sec, 64, f_fast)
    for tokens in (8192, 16384, 32768, 65536):
        j = judge("on", tokens)
        sec, times = timed(cold(j), reps=5, warmup=1)
        record(f"salon shared, {tokens} tok/batch, refs cold", sec, 64, f_fast)
        rows[f"salon shared, {tokens} tok/batch, refs cold"]["all_s"] = times
    best_tokens = min((16384, 32768, 65536, 8192),
                      key=lambda t: rows[f"salon shared, {t} tok/batch, refs cold"]["seconds"])
    j = judge("on", best_tokens)
    sec, _ = timed(lambda: j.judge(cands, refs), reps=5, warmup=1)
    f_warm = group_flops(model, plan, n_img, 12, 64, images=8, shared=True)
    record(f"salon shared, {best_tokens} tok/batch, refs cached", sec, 64, f_warm)

    # where the time goes, for the best configuration (cold)
    runner = j._runner
    kw = j._image_kwargs  # preprocessing on the GPU, as the judge does it
    prep, _ = timed(lambda: processor.image_processor(images=imgs, return_tensors="pt", **kw), reps=3)
    batch = processor.image_processor(images=imgs, return_tensors="pt", **kw)
    grids = batch["image_grid_thw"]
    pix = list(batch["pixel_values"].split(grids.prod(-1).tolist()))
    enc_t, _ = timed(lambda: runner.encode(pix, list(grids.split(1))), reps=3)
    encoded = runner.encode(pix, list(grids.split(1)))
    cmps = [(i, 8 + r) for i in range(8) for r in range(4)] + [(8 + r, i) for i in range(8) for r in range(4)]
    lm_t, _ = timed(lambda: runner.first_wins(encoded, cmps, best_tokens), reps=3)
    res["breakdown_s"] = {"preprocess_12_images": prep, "vision_12_images": enc_t, "language_model_64": lm_t}
    # the same judge on transformers' own RMSNorm and MLP forwards: what the fused layers save, and their answers
    unfused = judge("on", best_tokens, fused=False)
    sec, _ = timed(cold(unfused), reps=5, warmup=1)
    record(f"salon shared, {best_tokens} tok/batch, refs cold, transformers' layers", sec, 64, f_fast)
    res["max_abs_p_diff_fused_vs_unfused"] = float(np.abs(np.array(unfused.first_wins(pairs)) - p_fast).max())
    print(f"max |p_fused - p_unfused| over {len(pairs)} pairs: {res['max_abs_p_diff_fused_vs_unfused']:.4f}",
          flush=True)
    res["flops_per_group"] = {"stock": f_stock, "shared": f_fast}
    res["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None
    res["results"] = rows
    print(json.dumps(res["breakdown_s"]), flush=True)
    (Path(args.out) / "bench_judge_gpu.json").write_text(json.dumps(res, indent=2))
    best = min((r for k, r in rows.items() if k.startswith("salon") and "seconds" in r and "cold" in k),
               key=lambda r: r["seconds"])
    base = rows.get("stock, batches of 16, group of 64", {}).get("seconds")
    print(f"\nGRPO group (64 comparisons): salon {best['seconds']:.3f}s"
          + (f" vs stock batched {base:.3f}s ({base / best['seconds']:.1f}x)" if base else ""), flush=True)


if __name__ == "__main__":
    main()
