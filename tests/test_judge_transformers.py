"""The transformers pairwise judge on tiny Qwen-VL models built from configs (CPU, offline)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fixtures_models import flat_image, tiny_vl  # noqa: E402

from salon.judges.prompt import PAIRWISE_PROMPT, PairwisePrompt  # noqa: E402
from salon.judges.registry import load_judge  # noqa: E402
from salon.judges.verdict import Judge, Reference  # noqa: E402
from salon.judges.vlm_transformers import TransformersJudgeConfig, TransformersPairwiseJudge  # noqa: E402
from salon.judges.winrate import draw_references, judge_group  # noqa: E402
from salon.pool.errors import ConfigError, JudgeError  # noqa: E402


def noise(h, w, seed):
    from PIL import Image

    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (h, w, 3), dtype=np.uint8))


@pytest.fixture(scope="module")
def images():
    # different sizes on purpose: different token counts exercise padding in every batch
    return [noise(h, w, i) for i, (h, w) in enumerate([(60, 60), (80, 50), (100, 100), (30, 90), (64, 64)])]


@pytest.fixture(scope="module")
def judge():
    return load_judge("transformers", model=str(tiny_vl("qwen2_5_vl")))


@pytest.fixture(scope="module")
def taught():
    return TransformersPairwiseJudge(model=str(tiny_vl("qwen2_5_vl", taught=True)))


def refs_of(images):
    return [Reference.from_image(im, id=f"ref{i}", tier="love") for i, im in enumerate(images)]


def test_model_reloads_with_auto_classes_offline():
    from transformers import AutoModelForImageTextToText, AutoProcessor

    folder = tiny_vl("qwen2_5_vl")
    model = AutoModelForImageTextToText.from_pretrained(folder)
    processor = AutoProcessor.from_pretrained(folder)
    assert type(model).__name__ == "Qwen2_5_VLForConditionalGeneration"
    assert hasattr(processor, "image_processor") and processor.tokenizer("A")["input_ids"] != []


def test_loads_without_hub_kernels(judge):
    """transformers 5.25 swaps layers for Hub kernels at load unless told not to (fetched from the Hub: with
    HF_HUB_OFFLINE on a GPU the load fails); salon's loaders ask for none."""
    assert judge.model.use_kernels is False


def test_is_a_judge_and_names_itself(judge):
    assert isinstance(judge, Judge)
    assert judge.name.startswith("transformers:") and judge.prompt_version == PAIRWISE_PROMPT.version
    assert judge.sharing  # a Qwen2.5-VL runs the prefix-sharing path


def test_both_orders_are_evaluated_and_averaged(judge, images):
    cand, ref = images[0], images[1]
    v = judge.judge([cand], [Reference.from_image(ref, id="r")])[0][0]
    cand_first, ref_first = judge.first_wins([(cand, ref), (ref, cand)])
    assert v.p_first == pytest.approx(cand_first, abs=1e-6)
    assert v.p_second == pytest.approx(1 - ref_first, abs=1e-6)
    assert v.p == pytest.approx((v.p_first + v.p_second) / 2, abs=1e-12)
    assert v.reference == "r" and v.judge == judge.name and v.reason is None


@pytest.mark.parametrize("which", ["random", "taught"])
def test_swapping_candidate_and_reference_gives_complementary_probabilities(which, judge, taught, images):
    j = judge if which == "random" else taught
    a, b = images[2], images[3]
    ab = j.judge([a], [Reference.from_image(b, id="b")])[0][0].p
    ba = j.judge([b], [Reference.from_image(a, id="a")])[0][0].p
    assert ab + ba == pytest.approx(1.0, abs=1e-6)


def test_batched_equals_unbatched(judge, images):
    cands, refs = images[:3], refs_of(images[3:])
    batched = judge.judge(cands, refs)
    for i, c in enumerate(cands):
        for j, r in enumerate(refs):
            alone = judge.judge([c], [r])[0][0]
            assert alone.p == pytest.approx(batched[i][j].p, abs=1e-5)
            assert alone.p_first == pytest.approx(batched[i][j].p_first, abs=1e-5)


def test_several_groups_in_one_call_equal_each_alone(judge, images):
    """judge_many: two groups, each with its own references (one shared), in one batch: each group's
    verdicts as judge() gives them alone, within float32 rounding (1e-5)."""
    refs = refs_of(images[2:])
    groups = [(images[:2], refs[:2]), (images[1:3], refs[1:])]
    together = judge.judge_many(groups)
    assert [len(rows) for rows in together] == [2, 2] and [len(together[1][0])] == [2]
    for (cands, group_refs), rows in zip(groups, together):
        alone = judge.judge(cands, group_refs)
        for row, want in zip(rows, alone):
            assert [v.reference for v in row] == [r.id for r in group_refs]
            for got, v in zip(row, want):
                assert got.p == pytest.approx(v.p, abs=1e-5) and got.p_first == pytest.approx(v.p_first, abs=1e-5)


def test_small_batches_equal_one_batch(images):
    folder = str(tiny_vl("qwen2_5_vl"))
    big = TransformersPairwiseJudge(model=folder, max_batch_tokens=100_000)
    small = TransformersPairwiseJudge(model=folder, max_batch_tokens=1)  # one row per forward pass
    pairs = [(a, b) for a in images for b in images if a is not b]
    assert np.allclose(big.first_wins(pairs), small.first_wins(pairs), atol=1e-5)


@pytest.mark.parametrize("arch", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_prefix_sharing_equals_the_stock_forward_pass(arch, images):
    folder = str(tiny_vl(arch))
    shared = TransformersPairwiseJudge(model=folder, sharing="on")
    stock = TransformersPairwiseJudge(model=folder, sharing="off")
    assert shared.sharing and not stock.sharing
    pairs = [(a, b) for a in images for b in images if a is not b]
    p_shared, p_stock = np.array(shared.first_wins(pairs)), np.array(stock.first_wins(pairs))
    assert np.abs(p_shared - p_stock).max() < 1e-5
    assert p_stock.std() > 0  # the images matter, so equality is not two constants agreeing


@pytest.mark.parametrize("max_batch_tokens", [1, 100_000], ids=["one-image-per-encode", "all-images-at-once"])
def test_qwen3_vl_deepstack_features_returned_unsplit_give_the_stock_scores(max_batch_tokens, images):
    """transformers before 5.24 hands Qwen3-VL's deepstack features back as one tensor per layer
    (every image's tokens concatenated); the shared path splits them by grid size itself."""
    import torch

    folder = str(tiny_vl("qwen3_vl"))
    shared = TransformersPairwiseJudge(model=folder, sharing="on", max_batch_tokens=max_batch_tokens)
    inner = shared.model.model
    split_features = inner.get_image_features

    def as_before_5_24(*args, **kwargs):
        out = split_features(*args, **kwargs)
        assert isinstance(out.deepstack_features[0], (tuple, list))  # what 5.24 does; undone below
        out.deepstack_features = [torch.cat(list(layer)) for layer in out.deepstack_features]
        return out

    inner.get_image_features = as_before_5_24
    stock = TransformersPairwiseJudge(model=folder, sharing="off")
    pairs = [(a, b) for a in images[:3] for b in images[:3] if a is not b]
    p_shared, p_stock = shared.first_wins(pairs), stock.first_wins(pairs)
    assert None not in p_shared
    np.testing.assert_allclose(p_shared, p_stock, rtol=0, atol=1e-5)


def test_repeated_calls_agree_with_and_without_the_reference_cache(judge, images):
    cands, refs = images[:2], refs_of(images[2:4])
    judge._refs.clear()
    first = judge.judge(cands, refs)
    assert len(judge._refs) == 2  # references were encoded once and kept
    second = judge.judge(cands, refs)
    # fp32 CPU kernels batch differently between calls, so equal means equal to 1e-6 (seen: 1.5e-8)
    np.testing.assert_allclose([[v.p for v in row] for row in first], [[v.p for v in row] for row in second],
                               rtol=0, atol=1e-6)


def test_a_reference_file_is_read_once_while_it_stays_the_same_file(judge, images, tmp_path, monkeypatch):
    paths = []
    for i, im in enumerate(images[2:4]):
        paths.append(tmp_path / f"ref{i}.png")
        im.convert("RGBA").save(paths[-1])  # with alpha, as rendered: flattened on white
    refs = [Reference(id=f"ref{i}", path=p) for i, p in enumerate(paths)]
    reads = []
    load = Reference.load
    monkeypatch.setattr(Reference, "load", lambda self: reads.append(self.id) or load(self))
    first = judge.judge(images[:2], refs)
    second = judge.judge(images[:2], refs)
    assert sorted(reads) == ["ref0", "ref1"]  # decoded once, then kept with its key
    np.testing.assert_allclose([[v.p for v in row] for row in first], [[v.p for v in row] for row in second],
                               rtol=0, atol=1e-6)
    # the same as the painting given in memory, so the cached copy is the file's pixels
    in_memory = judge.judge(images[:2], [Reference.from_image(load(r), id=r.id) for r in refs])
    np.testing.assert_allclose([[v.p for v in row] for row in first], [[v.p for v in row] for row in in_memory],
                               rtol=0, atol=1e-6)
    images[4].save(paths[0])  # another painting under the same path: read again
    reads.clear()
    third = judge.judge(images[:2], refs)
    assert reads == ["ref0"]
    now = judge.judge(images[:2], [Reference.from_image(load(r), id=r.id) for r in refs])
    np.testing.assert_allclose([[v.p for v in row] for row in third], [[v.p for v in row] for row in now],
                               rtol=0, atol=1e-6)
    # a tiny random judge barely tells paintings apart, but 10x past the float noise
    assert max(abs(a.p - b.p) for ra, rb in zip(first, third) for a, b in zip(ra, rb)) > 1e-5


def test_taught_judge_prefers_the_brighter_painting(taught):
    bright, dark = flat_image(220, seed=1), flat_image(50, seed=2)
    v = taught.judge([bright], [Reference.from_image(dark, id="dark")])[0][0]
    assert v.p > 0.7 and v.p_first > 0.5 and v.p_second > 0.5


def test_unreadable_reference_gives_none_with_a_reason_and_the_rest_are_judged(judge, images, tmp_path):
    missing = Reference(id="gone", path=tmp_path / "gone.png")
    rows = judge.judge(images[:2], [missing, Reference.from_image(images[3], id="ok")])
    for row in rows:
        assert row[0].p is None and row[0].p_first is None and "could not read reference gone" in row[0].reason
        assert row[1].p is not None and row[1].reason is None


def test_broken_candidate_gives_none_only_for_itself(judge, images):
    from PIL import Image

    rows = judge.judge([Image.new("RGB", (0, 0)), images[0]], refs_of(images[1:3]))
    assert all(v.p is None and v.reason for v in rows[0])
    assert all(v.p is not None for v in rows[1])


def test_group_scores_are_one_per_image_against_one_draw(judge, images):
    draw = draw_references(refs_of(images[2:]), k=2, seed=7)
    scored = judge_group(judge, images[:2], draw)
    assert len(scored.scores) == 2 and all(0 < s < 1 for s in scored.scores)
    assert [[v.reference for v in row] for row in scored.verdicts] == [[r.id for r in draw.references]] * 2
    assert scored.record()["draw"]["references"] == [{"id": r.id, "tier": r.tier} for r in draw.references]


def test_answers_must_be_single_tokens():
    prompt = PairwisePrompt(version="t", intro="A:", between="B:", question="Which?",
                            answers=("Painting A", "Painting B"))
    with pytest.raises(JudgeError, match="tokens for this tokenizer"):
        TransformersPairwiseJudge(model=str(tiny_vl("qwen2_5_vl")), prompt=prompt)


def test_config_reports_every_problem_at_once():
    with pytest.raises(ConfigError) as e:
        TransformersJudgeConfig(model="", sharing="sometimes", dtype="int3", max_batch_tokens=0)
    assert len(e.value.problems) == 4


def test_missing_model_says_what_to_do(tmp_path):
    with pytest.raises(JudgeError, match="local model folder"):
        TransformersPairwiseJudge(model=str(tmp_path / "nothing-here"))


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl"])
def test_the_reference_prefix_cache_leaves_every_probability_as_it_was(arch, images):
    """A reference's prompt prefix (its LM key/value cache) is computed once and reused, keyed by the
    hash of its pixels: the same P, in float32, as a judge that recomputes every prefix."""
    folder = str(tiny_vl(arch))
    cached = TransformersPairwiseJudge(model=folder, sharing="on")
    fresh = TransformersPairwiseJudge(model=folder, sharing="on", prefix_cache=0)
    refs = refs_of(images[2:5])
    renamed = [Reference.from_image(r.image, id=f"other-{r.id}") for r in refs]  # same pixels, other ids
    for cands, rs in ((images[:2], refs), (images[1:3], renamed)):  # the second call meets cached prefixes
        got, want = cached.judge(cands, rs), fresh.judge(cands, rs)
        np.testing.assert_allclose([[v.p for v in row] for row in got], [[v.p for v in row] for row in want],
                                   rtol=0, atol=1e-5)
    assert len(cached._runner.prefixes) == 3 and not fresh._runner.prefixes  # one prefix per distinct painting
    with pytest.raises(ConfigError, match="prefix_cache"):
        TransformersJudgeConfig(model="m", prefix_cache=-1)


@pytest.mark.parametrize("arch, windows", [("qwen2_vl", False), ("qwen2_5_vl", True), ("qwen3_vl", False)])
def test_the_vision_tower_runs_on_inputs_planned_on_the_host(arch, windows, images, monkeypatch):
    """The shared path hands the tower its segments, rotary positions and (Qwen2.5-VL) windows made on the
    host, so bucketed attention never reads boundaries back from the card, and P is the stock forward's;
    a second call with the same grids reuses the plan."""
    from salon.judges import vlm_vision

    folder = str(tiny_vl(arch))
    shared = TransformersPairwiseJudge(model=folder, sharing="on")
    plans = shared._runner.vision_plans
    assert shared._runner.bucketed_vision and plans.segments and plans.windows == windows
    read_back = []
    planned = vlm_vision.windows_by_length
    monkeypatch.setattr(vlm_vision, "windows_by_length", lambda cu, device: read_back.append(cu) or planned(cu, device))
    pairs = [(a, b) for a in images[:3] for b in images[:3] if a is not b]
    p_shared = shared.first_wins(pairs)
    made = len(read_back)  # one list of windows per boundary tensor of the plan, none from inside the tower
    assert made == (2 if windows else 1) and len(plans._plans) == 1
    np.testing.assert_allclose(shared.first_wins(pairs), p_shared, rtol=0, atol=1e-6)  # float32, the plan reused
    assert len(read_back) == made and len(plans._plans) == 1
    assert not vlm_vision._WINDOWS  # registered only while the tower runs
    stock = TransformersPairwiseJudge(model=folder, sharing="off")
    np.testing.assert_allclose(p_shared, stock.first_wins(pairs), rtol=0, atol=1e-5)
