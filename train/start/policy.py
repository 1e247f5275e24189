"""A policy made from nothing: a small tokenizer, a few-million-parameter Qwen3, and a short
supervised start on procedural sketches through TRL's SFTTrainer.

    python -m salon.train.start.policy runs/tiny-start                 # ~0.7M parameters, seed 0
    python -m salon.train.start.policy runs/tiny-start-s1 --seed 1 --sketches 4000 --max-steps 400
    salon train train/configs/learn_tiny.yaml                          # policy.model: runs/tiny-start

1. sketches: `--sketches` procedural p5.brush sketches (salon.train.start.sketches), each through
   the real static gate (any that fails is dropped and counted: there should be none);
2. tokenizer: a byte-level BPE trained on the user prompts and the sketches, merging only inside
   the pieces of PIECES (a colour, a number, the code between two of them), so a reply is about 150
   tokens, every colour and number one token and `);\n  brush.circle(` another; the system prompt
   is one added token; Qwen's special tokens and chat template (salon.models.tiny);
3. model: `Qwen3ForCausalLM` at the widths of StartConfig (random, seeded), every weight trained;
4. SFTTrainer on conversational prompt-completion rows: the prompt is `salon train`'s own (the
   system prompt and "Paint <subject>." for every subject of the book), the completion a reply
   holding one sketch; the loss is on the completion only;
5. check: `check` replies sampled as `salon train` samples them (temperature 1, top_k 20, top_p
   0.95), gated statically, and the first `render` of them rendered in the sandbox; their gate
   pass, how many are distinct and which palettes they chose go to OUT/start_report.json.

OUT is a model folder (`AutoModelForCausalLM` / `AutoTokenizer`), what `policy.model` takes.
The same seed gives the same sketches, tokenizer and initial weights.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass
class StartConfig:
    sketches: int = 3000
    seed: int = 0
    vocab_size: int = 1024  # enough for every colour and number to be one token
    hidden_size: int = 128
    layers: int = 3
    heads: int = 4
    kv_heads: int = 2
    intermediate_size: int = 384
    epochs: float = 1.0
    batch_size: int = 16
    learning_rate: float = 5e-3
    check: int = 64  # replies sampled after the start and gated
    render: int = 16  # of which this many are rendered in the sandbox (0: none)
    # a cap on the optimiser steps (-1: `epochs` decide). At 150 calls still had the wrong arity; at 300
    # some seeds still wrote radii of 0 or less and vertices outside a shape (seed 7: 26 of 64 replies
    # threw in the sandbox); at 600 every one of five seeds rendered (benchmarks/start_policy_seeds.py)
    max_steps: int = 600

    def __post_init__(self):
        from salon.pool.errors import ConfigError

        p = [f"{name}={getattr(self, name)}: must be at least 1" for name in
             ("sketches", "vocab_size", "hidden_size", "layers", "heads", "kv_heads", "intermediate_size",
              "batch_size") if getattr(self, name) < 1]
        if self.hidden_size % self.heads or self.heads % self.kv_heads:
            p.append(f"hidden_size={self.hidden_size}, heads={self.heads}, kv_heads={self.kv_heads}: heads must "
                     "divide hidden_size and kv_heads divide heads")
        if self.epochs <= 0 or self.learning_rate <= 0:
            p.append("epochs and learning_rate must be positive")
        if not 0 <= self.render <= self.check:
            p.append(f"render={self.render}: between 0 and check={self.check}")
        if p:
            raise ConfigError(p, "start policy")


def prompt_rows(book=None) -> list[list[dict]]:
    """`salon train`'s prompt for every subject of the book (system prompt + "Paint <subject>.")."""
    from salon.curate.prompts import SubjectBook, paint_messages

    book = book or SubjectBook.load()
    return [[{"role": m.role, "content": m.text} for m in paint_messages(s)] for s in book.subjects.values()]


# a hex colour or a number is one piece, the code between two of them another: BPE merges inside a
# piece only, so `);\n  brush.vertex(` becomes one token and `-150` or `#5b8bb5` another, and no token
# straddles a number and the call after it (with those, 3,000 sketches taught nothing in 50 steps)
PIECES = r"#[0-9a-fA-F]{6}|-?[0-9]+(?:\.[0-9]+)?"


def sketch_tokenizer(texts: list[str], vocab_size: int, whole: tuple[str, ...] = ()):
    """Byte-level BPE over the pieces of PIECES, with Qwen's specials and chat template. Each text of
    `whole` (the system prompt) is one added token: a model this small has nothing to learn from
    reading 1,600 characters of instructions, and on a CPU every sample would pay for them."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from salon.models.tokenizer import CHAT_TEMPLATE, SPECIALS

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PIECES), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=SPECIALS[1:], chat_template=CHAT_TEMPLATE)
    fast.add_tokens([AddedToken(t, normalized=False, special=False) for t in whole])
    return fast


def build_policy(tok, cfg: StartConfig):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(cfg.seed)
    return Qwen3ForCausalLM(Qwen3Config(
        vocab_size=len(tok), hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads,
        head_dim=cfg.hidden_size // cfg.heads, max_position_embeddings=1024, tie_word_embeddings=True,
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"), eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id))


def start(out: str | Path, cfg: StartConfig, progress: bool = True) -> dict:
    """Generate, gate, tokenize, build and train the policy into `out`; returns the start report."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from salon.train.start.sketches import gate_sketches, generate_sketches

    out = Path(out)
    t0 = time.perf_counter()
    log.info("sketches: writing %d and gating them, then the tokenizer (about 15 s)", cfg.sketches)
    sketches = generate_sketches(cfg.sketches, cfg.seed)
    rejected = gate_sketches(sketches)
    sketches = [s for s in sketches if s.code not in rejected]
    prompts = prompt_rows()
    rng = random.Random(cfg.seed)
    rows = [{"prompt": rng.choice(prompts), "completion": [{"role": "assistant", "content": s.reply}]}
            for s in sketches]
    systems = tuple(sorted({m["content"] for p in prompts for m in p if m["role"] == "system"}))
    tok = sketch_tokenizer([m["content"] for p in prompts for m in p if m["role"] != "system"]
                           + [s.reply for s in sketches], cfg.vocab_size, whole=systems)
    model = build_policy(tok, cfg)
    params = sum(p.numel() for p in model.parameters())
    log.info("policy: %d parameters, %d tokens; %d sketches (%d rejected by the gate); SFT for %s steps "
             "(about 5 min on two idle cores at the defaults)", params, len(tok), len(sketches), len(rejected),
             cfg.max_steps if cfg.max_steps > 0 else f"{cfg.epochs:g} epoch(s) of")
    cuda = torch.cuda.is_available()
    args = SFTConfig(output_dir=str(out / "sft"), num_train_epochs=cfg.epochs, max_steps=cfg.max_steps,
                     per_device_train_batch_size=cfg.batch_size, learning_rate=cfg.learning_rate,
                     lr_scheduler_type="cosine", warmup_steps=10, weight_decay=0.0, max_length=1024,
                     logging_steps=10, save_strategy="no", report_to="none", seed=cfg.seed, use_cpu=not cuda,
                     bf16=cuda, dataloader_num_workers=0, disable_tqdm=not progress,
                     # TRL's SFT default (on), under transformers 5's name: the old one, TRL's, warns
                     activation_checkpointing=True)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)
    result = trainer.train()
    t1 = time.perf_counter()
    model = trainer.model.to("cpu", dtype=torch.float32).eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    report = {"config": asdict(cfg), "parameters": params, "vocab": len(tok), "sketches": len(sketches),
              "gate_rejected": len(rejected), "sft_steps": trainer.state.global_step,
              "sft_loss_first": losses[0] if losses else None, "sft_loss_last": losses[-1] if losses else None,
              "train_loss": result.training_loss, "sft_seconds": round(t1 - t0, 1)}
    if cfg.check:
        log.info("check: sampling %d replies as salon train does, gating them, rendering %d (about 40 s on two "
                 "idle cores at the defaults)", cfg.check, cfg.render)
        report["check"] = check_policy(out, cfg.check, cfg.render, cfg.seed, progress=progress)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    (out / "start_report.json").write_text(json.dumps(report, indent=2))
    return report


def check_policy(folder: str | Path, n: int, render: int, seed: int = 0, progress: bool = False) -> dict:
    """Sample `n` replies as `salon train` does; gate them, render the first `render`, and measure variety.
    With `progress`, a bar moves with every token step of sampling (a batch of 16 replies at a time, up
    to 400 tokens each; a batch that ends early jumps ahead) and another counts the paintings rendered."""
    import torch
    from tqdm import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer, StoppingCriteria, StoppingCriteriaList

    from salon.curate.extract import extract_code
    from salon.curate.sandbox.gate import static_violations
    from salon.train.start.sketches import palette_of

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, use_kernels=False).eval()
    prompts = prompt_rows()
    torch.manual_seed(seed)
    codes, batch_size, new_tokens = [], 16, 400
    batches = -(-n // batch_size)
    bar = tqdm(total=batches * new_tokens, desc=f"check: sampling {n} replies", unit="tok",
               disable=not progress, leave=False)

    class Tick(StoppingCriteria):  # never stops: moves the bar one token step
        def __call__(self, input_ids, scores, **kwargs):
            bar.update(1)
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    for b, i in enumerate(range(0, n, batch_size)):
        batch = [prompts[j % len(prompts)] for j in range(i, min(n, i + batch_size))]
        text = [tok.apply_chat_template(p, add_generation_prompt=True, tokenize=False) for p in batch]
        tok.padding_side = "left"
        x = tok(text, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            y = model.generate(**x, do_sample=True, temperature=1.0, top_k=20, top_p=0.95, max_new_tokens=new_tokens,
                               pad_token_id=tok.pad_token_id, stopping_criteria=StoppingCriteriaList([Tick()]))
        codes += [extract_code(t) for t in tok.batch_decode(y[:, x["input_ids"].shape[1]:], skip_special_tokens=True)]
        bar.update((b + 1) * new_tokens - bar.n)
    bar.close()
    static = [static_violations(c) for c in codes]
    palettes = Counter(palette_of(c) for c in codes)
    report = {"samples": n, "static_gate_pass": sum(not v for v in static) / n, "distinct": len(set(codes)) / n,
              "palettes": dict(palettes.most_common()),
              "violations": dict(Counter(v for vs in static for v in vs).most_common())}
    if render:
        from salon.curate.sandbox.render import render_sketches

        passed = [c for c, v in zip(codes, static) if not v][:render]
        results = render_sketches(passed, seeds=list(range(len(passed))), progress=progress) if passed else []
        ok = sum(r.ok for r in results)
        report.update(rendered=len(results), rendered_gate_pass=ok / len(results) if results else None,
                      gate_pass=(ok / len(results)) * report["static_gate_pass"] if results else 0.0,
                      render_violations=dict(Counter(v for r in results for v in r.violations).most_common()),
                      render_errors=dict(Counter(e[:120] for r in results for e in r.js_errors[:1]).most_common()))
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m salon.train.start.policy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", metavar="OUT", help="the model folder to write (policy.model of a config)")
    for name, default in asdict(StartConfig()).items():
        p.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    args = vars(p.parse_args(argv))
    out = args.pop("out")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        report = start(out, StartConfig(**args))
    except KeyboardInterrupt:
        from tqdm import tqdm

        for bar in list(tqdm._instances):  # the SFT's progress bar ends its line: the message gets one of its own
            bar.close()
        print(f"interrupted: {out} is not a finished policy; run the same command again to start it over",
              file=sys.stderr)
        return 130
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
