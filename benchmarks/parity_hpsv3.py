"""Parity of salon's HPSv3 (transformers 5.x) with the original `hpsv3` 1.0.0 code (transformers 4.45.2).

Manual, outside CI: it needs a second Python environment that salon's cannot be (hpsv3 pins
transformers==4.45.2). Build it once, then run this script with salon's Python:

    python3 -m venv /tmp/hpsv3-parity
    /tmp/hpsv3-parity/bin/pip install torch==2.14.1 torchvision==0.29.1 transformers==4.45.2 safetensors pillow
    /tmp/hpsv3-parity/bin/pip install --no-deps hpsv3==1.0.0
    # what its imports need to load HPSv3RewardInferencer (none of deepspeed, diffusers, opencv, timm):
    /tmp/hpsv3-parity/bin/pip install matplotlib pandas tensorboard "datasets<3" peft==0.13.2 trl==0.11.4 \\
        "accelerate<1.1" fire omegaconf requests rich
    .venv/bin/python benchmarks/parity_hpsv3.py --original-python /tmp/hpsv3-parity/bin/python [--out FILE]

It builds tiny:hpsv3 (salon.models.tiny: random weights, seed 0, the released layout), a copy whose
head output is scaled so mu spans a few units as the real model's does, and a few paintings, and
for each checkpoint scores them with salon (`load_hpsv3`, float32, one batch and one at a time), then
runs itself under the other Python (`--original`), where the unmodified `HPSv3RewardInferencer`
loads the same HPSv3.safetensors with `load_state_dict(strict=True)` over the base folder's
Qwen2-VL config and processor (its own yaml with float32 instead of bf16, which needs CUDA's
autocast; the base weights it insists on loading first are stand-ins it then overwrites), resizes with its own vendored qwen-vl-utils and returns `reward(...)`'s [B, 2]. It
prints the largest |mu| and |log sigma| differences, whether the token ids agree, and salon's
resize against the original's smart_resize on many sizes; --out writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROMPTS = ["a loose watercolour flower", "a peach hibiscus painted in loose watercolour", "a koi fish"]
HEAD_GAIN = 300.0
SIZES = [(600, 600), (512, 512), (1024, 1024), (600, 300), (300, 700), (97, 1403), (448, 448), (2000, 1500)]


def paintings(folder: Path) -> list[Path]:
    import numpy as np
    from PIL import Image

    paths = []
    for k, size in enumerate([(600, 600), (600, 600), (600, 600), (640, 480)]):
        rng = np.random.default_rng(k)
        small = rng.integers(0, 255, (6, 6, 3), dtype=np.uint8)
        image = Image.fromarray(small).resize(size, Image.BICUBIC)
        path = folder / f"painting-{k}.png"
        image.save(path)
        paths.append(path)
    return paths


def base_with_weights(ckpt: Path) -> Path:
    """The base folder plus base weights, which the original loads before HPSv3.safetensors
    replaces every one of them (strict): the checkpoint's own tensors, embeddings cut back to the
    base vocabulary and without the head, stand in for Qwen2-VL-7B-Instruct's."""
    import json
    import shutil

    from safetensors.torch import load_file, save_file

    base = ckpt / "base-with-weights"
    if not base.exists():
        shutil.copytree(ckpt / "base", base)
        rows = json.loads((base / "config.json").read_text())["vocab_size"]
        state = {k: v[:rows] if k in ("model.embed_tokens.weight", "lm_head.weight") else v
                 for k, v in load_file(str(ckpt / "HPSv3.safetensors")).items() if not k.startswith("rm_head.")}
        save_file(state, str(base / "model.safetensors"), metadata={"format": "pt"})
    return base


def original(ckpt: Path, images: list[str], prompts: list[str]) -> dict:
    """Under transformers 4.45.2: the hpsv3 wheel's inferencer on CPU in float32."""
    import importlib.resources

    import torch
    import yaml

    from hpsv3 import HPSv3RewardInferencer
    from hpsv3.dataset.utils import smart_resize

    config = yaml.safe_load((importlib.resources.files("hpsv3") / "config" / "HPSv3_7B.yaml").read_text())
    config.update(model_name_or_path=str(base_with_weights(ckpt)), bf16=False, torch_dtype="float32",
                  report_to="none", disable_flash_attn2=True)
    path = ckpt / "hpsv3-float32.yaml"
    path.write_text(yaml.safe_dump(config))
    inferencer = HPSv3RewardInferencer(config_path=str(path), checkpoint_path=str(ckpt / "HPSv3.safetensors"),
                                       device="cpu")
    with torch.inference_mode():
        batch = inferencer.prepare_batch(images, prompts)
        together = inferencer.reward(images, prompts).tolist()
        alone = [inferencer.reward([im], [p]).tolist()[0] for im, p in zip(images, prompts)]
    resized = {f"{h}x{w}": smart_resize(h, w, factor=28, min_pixels=200704, max_pixels=200704) for h, w in SIZES}
    return {"batch": together, "alone": alone, "input_ids": [row[m.bool()].tolist() for row, m in
                                                             zip(batch["input_ids"], batch["attention_mask"])],
            "resized": resized, "transformers": __import__("transformers").__version__}


def salon(ckpt: Path, images: list[str], prompts: list[str]) -> dict:
    import torch
    from PIL import Image

    from salon.judges.hpsv3 import hpsv3_image, load_hpsv3, resized_size

    judge = load_hpsv3(model=str(ckpt), dtype="float32", device="cpu")
    pics = [Image.open(p) for p in images]
    together = judge.rate(pics, prompts)
    alone = [judge.rate([im], [p])[0] for im, p in zip(pics, prompts)]
    batch = judge.inputs([hpsv3_image(im) for im in pics], prompts)
    return {"batch": [[r.mu, r.log_sigma] for r in together], "alone": [[r.mu, r.log_sigma] for r in alone],
            "input_ids": [row[m.bool()].tolist() for row, m in zip(batch["input_ids"], batch["attention_mask"])],
            "resized": {f"{h}x{w}": list(resized_size(h, w)) for h, w in SIZES},
            "transformers": __import__("transformers").__version__, "torch": torch.__version__}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--original-python", help="the Python of the environment with hpsv3 1.0.0 + transformers 4.45.2")
    ap.add_argument("--original", metavar="CKPT", help=argparse.SUPPRESS)  # the second half, run under that Python
    ap.add_argument("--images", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args(argv)
    if args.original:
        print(json.dumps(original(Path(args.original), args.images, _prompts(len(args.images)))))
        return 0
    if not args.original_python:
        ap.error("give --original-python (see the module docstring for how to build that environment)")
    from salon.models.names import resolve_model

    work = Path(tempfile.mkdtemp(prefix="salon-hpsv3-parity-"))
    tiny = Path(resolve_model("tiny:hpsv3", work))
    images = [str(p) for p in paintings(work)]
    report = {"images": len(images), "checkpoints": {}}
    for name, ckpt in (("tiny:hpsv3", tiny), (f"tiny:hpsv3, head output x{HEAD_GAIN:g}", scaled(tiny, work))):
        ours = salon(ckpt, images, _prompts(len(images)))
        done = subprocess.run([args.original_python, __file__, "--original", str(ckpt), "--images", *images],
                              capture_output=True, text=True, cwd=work)
        if done.returncode:
            print(done.stderr[-4000:], file=sys.stderr)
            return 1
        theirs = json.loads(done.stdout.strip().splitlines()[-1])
        report.update(salon={"transformers": ours["transformers"], "torch": ours["torch"]},
                      original={"package": "hpsv3 1.0.0 HPSv3RewardInferencer", "transformers": theirs["transformers"]},
                      same_resize={k: ours["resized"][k] == list(v) for k, v in theirs["resized"].items()})
        report["checkpoints"][name] = compare(ours, theirs)
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def scaled(tiny: Path, work: Path) -> Path:
    """A copy of tiny:hpsv3 whose head's last layer is HEAD_GAIN times larger: the random head's mu
    is about 0.01, this puts it in units like the real model's (-10..+10)."""
    import shutil

    from safetensors.torch import load_file, save_file

    out = work / "tiny-hpsv3-scaled"
    shutil.copytree(tiny / "base", out / "base")
    state = load_file(str(tiny / "HPSv3.safetensors"))
    for key in ("rm_head.5.weight", "rm_head.5.bias"):
        state[key] = state[key] * HEAD_GAIN
    save_file(state, str(out / "HPSv3.safetensors"), metadata={"format": "pt"})
    return out


def compare(ours: dict, theirs: dict) -> dict:
    def diff(key, col):
        return max(abs(a[col] - b[col]) for a, b in zip(ours[key], theirs[key]))

    mus = [r[0] for r in theirs["batch"]]
    return {"max_abs_diff_mu_batch": diff("batch", 0), "max_abs_diff_log_sigma_batch": diff("batch", 1),
            "max_abs_diff_mu_alone": diff("alone", 0), "max_abs_diff_log_sigma_alone": diff("alone", 1),
            "mu_range": [min(mus), max(mus)], "same_token_ids": ours["input_ids"] == theirs["input_ids"]}


def _prompts(n: int) -> list[str]:
    return [PROMPTS[k % len(PROMPTS)] for k in range(n)]


if __name__ == "__main__":
    sys.exit(main())
