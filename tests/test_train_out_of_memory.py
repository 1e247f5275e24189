"""A step that runs out of card memory ends `salon train` with what to change, not a CUDA traceback.

A CUDA out-of-memory error cannot happen on a CPU: the tests raise torch's own OutOfMemoryError from
inside the real smoke run (torch's backward, transformers' sampling), the way the CUDA allocator raises it,
and read what `salon train` prints.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from salon.apps.cli import main
from salon.train.config import load_config
from salon.train.out_of_memory import advice, judge_bytes_on
from train_support import SMOKE

H200_64 = str(Path(__file__).resolve().parent.parent / "train" / "configs" / "lora_h200_64.yaml")
OOM = "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB"


def out_of_memory(*args, **kwargs):
    raise torch.cuda.OutOfMemoryError(OOM)


def smoke_train(tmp_path, capsys) -> tuple[int, str]:
    code = main(["train", SMOKE, "--output-dir", str(tmp_path / "run"), "--max-steps", "1",
                 "--set", "smoke.examples=0"])  # the tiny policy's own code: gated, nothing to draw
    return code, capsys.readouterr().err


@pytest.mark.slow
def test_out_of_memory_in_the_backward_pass_names_the_update_settings(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(torch.autograd, "backward", out_of_memory)  # what Tensor.backward calls
    code, err = smoke_train(tmp_path, capsys)
    assert code == 2, err[-2000:]
    # on a line of its own, not after the progress bar's
    assert "\nsalon train: the card ran out of memory in the update (the loss and its backward pass), step 1" in err
    assert "Tried to allocate 20.00 GiB" in err
    # smoke.yaml: checkpointing off, 4 completions a micro-step
    assert "grpo.gradient_checkpointing=true" in err
    assert "grpo.per_device_train_batch_size=2 grpo.gradient_accumulation_steps=2" in err
    assert "grpo.generation_waves" not in err  # generation had finished
    assert "no checkpoint was written yet" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_out_of_memory_while_sampling_names_the_generation_settings(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(torch, "multinomial", out_of_memory)  # transformers' sampler draws each token with it
    code, err = smoke_train(tmp_path, capsys)
    assert code == 2, err[-2000:]
    assert "the card ran out of memory in generating the completions, step 1" in err
    assert "a shorter grpo.max_completion_length (now 24)" in err
    # smoke.yaml generates with transformers (a CPU), one group of 2 a batch: no waves, no batch to halve
    assert "grpo.generation_waves" not in err and "grpo.steps_per_generation" not in err
    assert "grpo.gradient_checkpointing=true" not in err
    assert "Traceback" not in err


def test_the_h200_recipe_on_a_smaller_card_is_told_each_lever():
    cfg = load_config(H200_64, [])
    update = advice(cfg, "update", judge_bytes=int(15.5 * 2**30))
    assert any(t.startswith("grpo.gradient_checkpointing=true") for t in update)
    assert any(t.startswith("grpo.per_device_train_batch_size=4 grpo.gradient_accumulation_steps=16") for t in update)
    assert any("judge.kwargs.device=cuda:1: the judge's 15.5 GiB" in t for t in update)
    compiled = advice(load_config(H200_64, ["grpo.generation=compiled"]), "generation")  # what auto resolves to there
    assert any(t.startswith("grpo.generation_waves=2: the 64 completions") for t in compiled)
    plain = advice(load_config(H200_64, ["grpo.generation=transformers"]), "generation")  # waves are the loop's
    assert not any("generation_waves" in t for t in plain)
    assert any(t.startswith("grpo.steps_per_generation=4: the step's 64 completions generated in two batches of 32")
               for t in plain)
    # the log-probabilities keep no activations: checkpointing is no lever there
    assert not any("checkpointing" in t for t in advice(cfg, "log-probabilities"))
    # checkpointing already on for part of the layers: the lever is the rest of them
    partial = load_config(H200_64, ["grpo.gradient_checkpointing=true", "grpo.gradient_checkpointing_layers=0.5"])
    assert any(t.startswith("grpo.gradient_checkpointing_layers=1.0 (now 0.5)") for t in advice(partial, "update"))
    # per-group updates keep their micro-step a whole number of groups: no halving offered
    per_group = load_config(H200_64, ["grpo.update_per_group=true"])
    assert not any("per_device_train_batch_size" in t for t in advice(per_group, "update"))


def test_only_the_judge_weights_on_the_trainer_card_count():
    layer = torch.nn.Linear(4, 3)  # 15 float32 parameters: 60 bytes

    class Judge:
        model = layer

    assert judge_bytes_on(Judge(), "cpu") == 60
    assert judge_bytes_on(Judge(), None) == 0  # the trainer on a CPU: no card to share
    assert judge_bytes_on(object(), "cpu") == 0  # a served judge holds no weights here


def test_a_run_with_checkpoints_is_told_the_one_resume_latest_takes(tmp_path):
    from salon.train.out_of_memory import message

    out = tmp_path / "run"
    for step in (2, 10):
        (out / f"checkpoint-{step}").mkdir(parents=True)
    (out / "checkpoint-99.log").write_text("")  # a file, not a checkpoint folder
    cfg = load_config(SMOKE, [f"output_dir={out}"])
    text = message(cfg, "update", torch.cuda.OutOfMemoryError(OOM), step=11)
    assert "the run goes on from checkpoint-10 with --set resume=latest" in text
