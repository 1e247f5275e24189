"""HPSv3 on transformers 5.x (issue 19): the strict loader, the original forward, the resize, the prompt.

Every model here goes through the production loader (salon.judges.hpsv3.load_hpsv3 ->
salon.models.hpsv3.load_released): tiny:hpsv3 and random:hpsv3 (real vocabulary, tiny widths) saved in
the released layout, and copies of it with a wrong layout. The random tiny head gives mu of about
0.01; tolerances are set against that: one image alone vs in a padded batch (float32, CPU) must
agree to 1e-6 in mu (measured 4e-9), and a different prompt must move mu by more than 2e-5
(measured 2e-4).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
from fixtures_models import smooth_painting as painting, tiny_hpsv3  # noqa: E402

from salon.judges.hpsv3 import hpsv3_image, load_hpsv3, resized_size  # noqa: E402
from salon.judges.hpsv3_config import HPSv3Config  # noqa: E402
from salon.judges.hpsv3_rating import score_from_mu  # noqa: E402
from salon.judges.registry import load_judge  # noqa: E402
from salon.judges.verdict import RatingJudge  # noqa: E402
from salon.models.hpsv3_prompt import INSTRUCTION, REWARD_TOKEN, TAIL  # noqa: E402
from salon.pool.errors import ConfigError, JudgeError  # noqa: E402

TOL = 1e-6


@pytest.fixture(scope="module")
def judge():
    return load_hpsv3(model=str(tiny_hpsv3()))


def test_the_rubric_is_byte_identical_to_the_wheel():
    # sha256 of hpsv3 1.0.0's dataset/data_collator_qwen.py INSTRUCTION and prompt_with_special_token
    assert hashlib.sha256(INSTRUCTION.encode()).hexdigest() == \
        "0393599dad45a971903d1d62a3acf9bad3ccccdafa7f40f680523419e1f68b7a"
    assert hashlib.sha256(TAIL.encode()).hexdigest() == "2471faca094ae5bd6fe17b71dce20c3d7583625545e235889f7e74e7eeb69d0a"


def test_a_clean_load_of_the_released_layout(judge):
    folder = tiny_hpsv3()
    assert sorted(p.name for p in folder.iterdir()) == ["HPSv3.safetensors", "base"]
    from safetensors import safe_open

    with safe_open(str(folder / "HPSv3.safetensors"), "pt") as f:
        keys = set(f.keys())
        assert f.get_tensor("model.norm.weight").dtype.is_floating_point
    assert {"visual.merger.ln_q.weight", "model.embed_tokens.weight", "lm_head.weight", "rm_head.5.bias"} <= keys
    assert not any(k.startswith(("model.language_model.", "model.visual.")) for k in keys)  # the 4.45 names
    assert isinstance(judge, RatingJudge) and judge.name == f"hpsv3:{folder}"
    model = judge.model
    assert not model.training and not model.rm_head.training  # Dropout off
    assert model.rm_head[0].weight.dtype.__str__() == "torch.float32"
    assert judge.reward_id == judge.processor.tokenizer.convert_tokens_to_ids(REWARD_TOKEN)
    assert model.config.text_config.vocab_size == judge.reward_id + 1  # rows read from the checkpoint
    ratings = judge.rate([painting(0), painting(1)])
    assert all(r.ok and np.isfinite(r.mu) and np.isfinite(r.log_sigma) for r in ratings)
    assert [r.score for r in ratings] == pytest.approx([score_from_mu(r.mu) for r in ratings])
    again = judge.rate([painting(0), painting(1)])
    assert [r.mu for r in again] == pytest.approx([r.mu for r in ratings], abs=TOL)  # repeatable
    assert load_judge("hpsv3", model=str(folder)).score([painting(0)]) == pytest.approx([ratings[0].score], abs=TOL)


def _copy_with(tmp_path, edit) -> Path:
    """A copy of tiny:hpsv3 whose checkpoint's state dict went through `edit(dict) -> dict`."""
    from safetensors.torch import load_file, save_file

    src = tiny_hpsv3()
    dst = tmp_path / "ckpt"
    shutil.copytree(src / "base", dst / "base")
    save_file(edit(load_file(str(src / "HPSv3.safetensors"))), str(dst / "HPSv3.safetensors"))
    return dst


def test_a_checkpoint_in_the_new_layout_fails_loudly(tmp_path):
    from salon.models.hpsv3 import to_model_key

    folder = _copy_with(tmp_path, lambda sd: {to_model_key(k): v for k, v in sd.items()})
    with pytest.raises(JudgeError) as e:
        load_hpsv3(model=str(folder))
    msg = str(e.value)
    assert "model.language_model.embed_tokens.weight" in msg and "4.45 names" in msg


def test_one_rm_head_key_removed_fails_and_names_it(tmp_path):
    folder = _copy_with(tmp_path, lambda sd: {k: v for k, v in sd.items() if k != "rm_head.3.weight"})
    with pytest.raises(JudgeError, match=r"1 missing: rm_head\.3\.weight.*Nothing was loaded"):
        load_hpsv3(model=str(folder))


def test_an_extra_key_fails_and_names_it(tmp_path):
    import torch

    folder = _copy_with(tmp_path, lambda sd: {**sd, "rm_head.7.weight": torch.zeros(2, 2)})
    with pytest.raises(JudgeError, match=r"1 unexpected: rm_head\.7\.weight"):
        load_hpsv3(model=str(folder))


def test_missing_files_say_what_to_download(tmp_path):
    with pytest.raises(JudgeError, match="hf download MizzenAI/HPSv3 HPSv3.safetensors"):
        load_hpsv3(model=str(tmp_path))
    (tmp_path / "HPSv3.safetensors").write_bytes((tiny_hpsv3() / "HPSv3.safetensors").read_bytes())
    with pytest.raises(JudgeError, match="hf download Qwen/Qwen2-VL-7B-Instruct"):
        load_hpsv3(model=str(tmp_path))


def test_one_image_scores_the_same_alone_and_in_a_padded_batch(judge):
    images = [painting(3), painting(4), painting(5, size=(300, 700))]
    prompts = ["a koi", "a peach hibiscus painted in loose watercolour with soft edges", "a flower"]
    batch = judge.inputs([hpsv3_image(im) for im in images], prompts)
    assert (batch["attention_mask"] == 0).any()  # rows of different lengths: right padding happened
    together = judge.rate(images, prompts)
    for k in range(3):
        alone = judge.rate([images[k]], [prompts[k]])[0]
        assert alone.mu == pytest.approx(together[k].mu, abs=TOL)
        assert alone.log_sigma == pytest.approx(together[k].log_sigma, abs=TOL)


def test_exactly_one_reward_token_per_row(judge):
    image = hpsv3_image(painting(6))
    batch = judge.inputs([image, image], ["a", "b"])
    ids, rid = batch["input_ids"], judge.reward_id
    assert ((ids == rid).sum(dim=1) == 1).all()
    args = lambda x: (x, batch["attention_mask"], batch["pixel_values"], batch["image_grid_thw"], rid)  # noqa: E731
    none = ids.clone()
    none[1][none[1] == rid] = judge.processor.tokenizer.pad_token_id
    with pytest.raises(ValueError, match=r"exactly one <\|Reward\|>.*\[1, 0\]"):
        judge.model.reward(*args(none))
    two = ids.clone()
    two[0, 1] = rid
    with pytest.raises(ValueError, match=r"\[2, 1\]"):
        judge.model.reward(*args(two))
    with pytest.raises(ConfigError, match="without the <|Reward|> token"):
        HPSv3Config(model="x", prompt=f"a flower {REWARD_TOKEN}")


def test_a_600px_canvas_is_resized_to_420_as_the_original(judge):
    assert resized_size(600, 600) == (420, 420)  # float rounding in the original: not 448
    assert resized_size(512, 512) == (448, 448) and resized_size(1024, 1024) == (448, 448)
    assert resized_size(600, 300) == (644, 336)  # scaled up by ceil to at least 200704 px, sides of 28
    seen = hpsv3_image(painting(7, mode="RGBA"))
    assert seen.size == (420, 420) and seen.mode == "RGB"
    clear = hpsv3_image(Image.new("RGBA", (600, 600), (0, 0, 0, 0)))
    assert clear.getpixel((10, 10)) == (255, 255, 255)  # transparency lands on white, not black
    batch = judge.inputs([seen], ["a flower"])
    assert batch["image_grid_thw"].tolist() == [[1, 30, 30]]  # the processor did not resize again
    assert int((batch["input_ids"] == judge.model.config.image_token_id).sum()) == 225


def test_the_prompt_changes_the_score(judge):
    image = painting(8)
    flower, koi = judge.rate([image, image], ["a loose watercolour flower", "a koi fish in a pond"])
    assert abs(flower.mu - koi.mu) > 20 * TOL


def test_bfloat16_keeps_the_head_in_float32():
    import torch

    bf16 = load_hpsv3(model=str(tiny_hpsv3()), dtype="bfloat16")
    assert bf16.model.rm_head[0].weight.dtype == torch.float32
    assert bf16.model.model.language_model.embed_tokens.weight.dtype == torch.bfloat16
    assert bf16.rate([painting(9)])[0].ok


def test_random_hpsv3_loads_with_the_real_vocabulary(tmp_path):
    from salon.models.shapes import HPSV3_VOCAB_ROWS, build_random
    from salon.models.tiny import TINY_HPSV3_TEXT, TINY_HPSV3_VISION

    folder = build_random("hpsv3", tmp_path / "r", shape=(TINY_HPSV3_TEXT, TINY_HPSV3_VISION))
    scorer = load_hpsv3(model=folder)
    assert scorer.model.get_input_embeddings().weight.shape[0] == HPSV3_VOCAB_ROWS
    assert scorer.rate([painting(10)])[0].ok
    assert build_random("hpsv3", tmp_path / "r") == folder  # built once


def test_failures_are_none_with_a_reason_never_zero(judge):
    class Broken:
        def convert(self, *a):
            raise OSError("truncated")
        mode = "P"

    ratings = judge.rate([Broken(), painting(11)])
    assert ratings[0].score is None and "truncated" in ratings[0].reason and ratings[1].ok


def test_config_problems_are_reported_at_once():
    from salon.judges.registry import judge_problems

    def problems(model, **kwargs):
        return judge_problems(model, "hpsv3", "reward.absolute_kwargs.model", arguments="reward.absolute_kwargs",
                              **kwargs)

    assert problems(None)[0].startswith("reward.absolute_kwargs.model is required by the hpsv3 judge")
    found = problems("tiny:hpsv3", dtype="fp8", batch_size=0, colour=1)
    assert len(found) == 3 and "takes no colour" in found[0]  # the unknown field, and the known ones' problems
    assert problems("./no-such-ckpt")[0].startswith("reward.absolute_kwargs.model=./no-such-ckpt: no such folder")
    assert problems("http://127.0.0.1:9", dtype="bfloat16")[0].endswith(
        "applies to a local checkpoint, not to the service at http://127.0.0.1:9")
