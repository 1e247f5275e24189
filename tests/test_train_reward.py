"""The TRL reward adapter (issue 6 point 8): one value per completion; gate failure is a penalty,
infrastructure failure (render unavailable, an undecodable PNG, a judge without an answer) is
None and counted; every rollout is archived with the columns of `Rollout`."""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future
from pathlib import Path

import pandas as pd
import pytest

from salon.curate.sandbox.render import RenderConfig
from salon.curate.sandbox.gpu import GPU_FLAG_SETS
from salon.judges.references import load_references
from salon.train.record.archive import RolloutArchive, load_rollouts
from salon.train.config import RewardSettings
from salon.train.record.recorder import Recorder
from salon.train.render_workers import RenderPool
from salon.train.reward import RewardAdapter, submit_each
from salon.train.rollout import Planner, Rollout, column_kinds
from salon.train.scoring import Scorer
from salon.train.smoke import ExampleSketches
from salon.models.names import resolve_model
from salon.models.tiny import resolve_references

pytestmark = pytest.mark.browser

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"


def fenced(name: str) -> str:
    return f"Here is my painting.\n```javascript\n{(EXAMPLES / name).read_text()}\n```"


NOT_WEBGL = "```javascript\nfunction setup() { createCanvas(600, 600); brush.circle(0, 0, 50); }\n```"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {"judge": resolve_model("tiny:qwen2_5_vl", root / "judge"),
            "refs": load_references(resolve_references("tiny:refs", root / "refs"))}


@pytest.fixture(scope="module")
def render_pool():
    with RenderPool(RenderConfig(browsers=2, timeout_s=30), workers=1) as pool:
        yield pool


def adapter(tiny, pool, tmp_path, judge_name="transformers", render=None, planner=None, **settings):
    from salon.judges.registry import load_judge

    judge = load_judge(judge_name, model=tiny["judge"])
    scorer = Scorer(RewardSettings(**settings), judge=judge, references=tiny["refs"], k=2)
    archive = RolloutArchive(tmp_path / "rollouts", [f"reward_{c}" for c in scorer.components])
    return RewardAdapter(scorer, render=render or submit_each(pool), planner=planner,
                         recorder=Recorder(scorer.components, archive=archive))


def call(a, prompts, completions, rows, step=0):
    metrics = {}

    class State:
        global_step = step

    out = a(prompts=prompts, completions=[[{"role": "assistant", "content": c}] for c in completions],
            trainer_state=State(), log_metric=lambda k, v: metrics.__setitem__(k, v), row=rows,
            subject=["s"] * len(rows))
    return out, metrics


def test_one_value_per_completion_gate_failures_get_the_penalty(tiny, render_pool, tmp_path):
    a = adapter(tiny, render_pool, tmp_path, gate_penalty=-0.25)
    boundaries = []  # the overlapped step's hook (the trainer takes the whole card back there): once a judge call
    a.before_judging = lambda: boundaries.append(len(boundaries))
    prompts = ["Paint a teacup."] * 3 + ["Paint a lake."] * 3
    completions = [fenced("still_02_teacup.js"), "I cannot paint.", fenced("mountain_02_collapse.js"),
                   fenced("hibiscus_04_blank.js"), NOT_WEBGL, fenced("still_02_teacup.js")]
    rewards, metrics = call(a, prompts, completions, rows=[0, 0, 0, 1, 1, 1])
    assert len(boundaries) == metrics["salon/time/judge_calls"] > 0
    assert len(rewards) == 6
    assert rewards[1] == rewards[3] == rewards[4] == -0.25  # no sketch, blank canvas, not WEBGL
    for i in (0, 2, 5):
        assert isinstance(rewards[i], float) and rewards[i] > 0
    df = load_rollouts(tmp_path)
    assert list(df["reward"]) == pytest.approx(rewards)
    assert set(a.reward_columns) <= set(df.columns) and "reward_judge" in df
    assert df.loc[3, "violations"].tolist() == ["blank_canvas"] and df.loc[1, "violations"].tolist() == ["no_sketch"]
    assert df["reward_judge"].notna().tolist() == [True, False, True, False, False, True]
    # every painting names the GL path that drew it; the gate stopped "I cannot paint." before any browser
    assert df.loc[0, "render_gl"] in ("swiftshader", *GPU_FLAG_SETS) and pd.isna(df.loc[1, "render_gl"])
    for _, group in df.groupby("group"):  # a group faces one reference draw
        assert group["draw_seed"].nunique() == 1 and len({tuple(r) for r in group["references"]}) == 1
    assert metrics["salon/gate_pass"] == pytest.approx(0.5) and metrics["salon/none"] == 0
    assert metrics["salon/violations/blank_canvas"] == pytest.approx(1 / 6)
    assert "salon/judge/mean" in metrics and "salon/coverage" in metrics


def test_render_unavailable_is_none_and_counted_never_zero(tiny, tmp_path):
    with RenderPool(RenderConfig(chromium="/bin/false"), workers=1) as broken:
        a = adapter(tiny, broken, tmp_path)
        rewards, metrics = call(a, ["Paint a teacup."] * 3,
                                [fenced("still_02_teacup.js"), fenced("mountain_02_collapse.js"), "no code"],
                                rows=[0, 0, 0])
    assert rewards[:2] == [None, None]
    assert rewards[2] == 0.0  # the gate rejects this one before any browser: a bad painting, not an outage
    assert metrics["salon/render_unavailable"] == 2 and metrics["salon/none"] == 2
    df = load_rollouts(tmp_path, images=False)
    assert df["missing"].map(list).tolist() == [["render"], ["render"], []]


def test_judge_failure_is_none_and_counted(tiny, render_pool, tmp_path):
    a = adapter(tiny, render_pool, tmp_path, judge_name="train_support:FlakyJudge")
    prompts = ["Paint a teacup."] * 2 + ["Paint a lake."] * 2
    completions = [fenced("still_02_teacup.js"), "nothing"] * 2
    rewards, metrics = call(a, prompts, completions, rows=[0, 0, 1, 1])
    assert len(rewards) == 4
    assert rewards[1] == rewards[3] == 0.0  # gate failures keep their penalty
    assert sum(r is None for r in rewards) == 1  # the painting judged second got no answer
    assert metrics["salon/judge_missing"] == 1 and metrics["salon/none"] == 1
    df = load_rollouts(tmp_path, images=False)
    failed = df[df["reward"].isna()].iloc[0]
    assert list(failed["missing"]) == ["judge"] and "timeout" in failed["judge_reason"]
    assert failed["reward_gate"] == 1.0 and failed["reward_judge"] != failed["reward_judge"]  # NaN, not 0


def test_prefetch_starts_rendering_at_generation_and_is_reused(tiny, render_pool, tmp_path):
    a = adapter(tiny, render_pool, tmp_path)
    prompts, completions = ["Paint a teacup."] * 2, [fenced("still_02_teacup.js"), "nothing"]
    before = render_pool.rendered
    a.prefetch(prompts, [[{"role": "assistant", "content": c}] for c in completions], step=0)
    assert len(a._steps[0].renders) == 1  # started at generation
    (render, prepared), = a._steps[0].renders.values()
    # decoded and measured as soon as it is rendered, before any reward call asks for it
    image, composed = prepared.result(timeout=60)
    assert render.done() and image.size == (600, 600) and composed.coverage > 0
    rewards, _ = call(a, prompts, completions, rows=[0, 0])
    assert rewards[0] > 0
    assert render_pool.rendered - before == 1  # rendered once, at prefetch


def test_the_next_steps_paintings_start_during_this_step_and_wait_for_their_call(tiny, render_pool, tmp_path):
    """grpo.max_staleness=1: step 1's completions are generated, and prefetched, while step 0 is still being
    rewarded; step 0's call keeps its own paintings, step 1's call finds its own rendered."""
    a = adapter(tiny, render_pool, tmp_path)
    prompts = ["Paint a teacup."] * 2
    before = render_pool.rendered
    a.prefetch(prompts, [[{"role": "assistant", "content": fenced("still_02_teacup.js")}]] * 2, step=0)
    a.prefetch(prompts, [[{"role": "assistant", "content": fenced("koi_02_swirl.js")}]] * 2, step=1)  # ahead
    assert sorted(a._steps) == [0, 1]
    now, _ = call(a, prompts, [fenced("still_02_teacup.js")] * 2, rows=[0, 0], step=0)
    assert sorted(a._steps) == [0, 1]  # step 0's call let nothing of step 1's go
    later, _ = call(a, prompts, [fenced("koi_02_swirl.js")] * 2, rows=[0, 0], step=1)
    assert sorted(a._steps) == [1]  # and step 1's call let step 0's go
    assert all(r > 0 for r in now + later)
    assert render_pool.rendered - before == 2  # one painting a step, each rendered once, at prefetch


def truncated(step):
    """A render step whose PNGs arrive cut in half (a broken transfer): the gate passed, the
    painting exists, but it cannot be decoded."""
    def render(items):
        out = []
        for fut in step(items):
            res = fut.result()
            done = Future()
            done.set_result(dataclasses.replace(res, png=res.png[: len(res.png) // 2]) if res.png else res)
            out.append(done)
        return out

    return render


def test_a_passed_render_whose_png_cannot_be_decoded_is_none_not_the_gate_penalty(tiny, render_pool, tmp_path):
    a = adapter(tiny, render_pool, tmp_path, render=truncated(submit_each(render_pool)), gate_penalty=-0.25)
    rewards, metrics = call(a, ["Paint a teacup."] * 2, [fenced("still_02_teacup.js"), "no code"], rows=[0, 0])
    assert rewards == [None, -0.25]  # missing, not a bad painting; the gate failure keeps its penalty
    assert metrics["salon/image_unreadable"] == 1 and metrics["salon/none"] == 1
    df = load_rollouts(tmp_path, images=False)
    assert df["missing"].map(list).tolist() == [["image"], []]
    assert "could not be decoded" in df.loc[0, "judge_reason"]


def test_archive_columns_are_the_rollout_fields_and_an_image_judge_weight_counts(tiny, render_pool, tmp_path):
    a = adapter(tiny, render_pool, tmp_path, weights={"colourfulness": 0.2})
    rewards, _ = call(a, ["Paint a lake."] * 2, [fenced("mountain_02_collapse.js"), fenced("still_02_teacup.js")],
                      rows=[0, 0])
    df = load_rollouts(tmp_path)
    fields = [f.name for f in dataclasses.fields(Rollout) if f.name not in ("rewards", "painting")]
    assert list(column_kinds()) == fields
    assert list(df.columns) == fields + a.reward_columns
    weights = {"gate": 0.05, "length": 0.05, "judge": 0.9, "colourfulness": 0.2}
    for i, reward in enumerate(rewards):
        expected = sum(w * df.loc[i, f"reward_{c}"] for c, w in weights.items())
        assert df.loc[i, "reward_colourfulness"] > 0
        assert reward == pytest.approx(expected, abs=1e-9)


def test_example_sketches_are_a_planner_the_adapter_does_not_know_about(tiny, render_pool, tmp_path):
    planner = ExampleSketches(Planner(0), share=0.5, files=["still_02_teacup.js"])
    a = adapter(tiny, render_pool, tmp_path, planner=planner)
    rewards, metrics = call(a, ["Paint a teacup."] * 4, ["no sketch here"] * 4, rows=[0, 0, 0, 0])
    df = load_rollouts(tmp_path, images=False)
    assert [v if isinstance(v, str) else None for v in df["substituted_example"]] == \
        ["still_02_teacup.js"] * 2 + [None] * 2
    assert df["gate_passed"].tolist() == [True, True, False, False] and metrics["salon/gate_pass"] == 0.5
    assert df["completion"].tolist() == ["no sketch here"] * 4  # the policy's text is what was archived
    assert rewards[0] > 0 and rewards[2:] == [0.0, 0.0]


def finishing(delays: list[float | None]) -> tuple[list[Future], list]:
    """Futures that finish after their delays (None: already done), and the threads finishing them."""
    import threading

    futures = [Future() for _ in delays]
    threads = []
    for f, delay in zip(futures, delays):
        if delay is None:
            f.set_result(None)
            continue
        finish = lambda f=f, d=delay: (threading.Event().wait(d), f.set_result(None))  # noqa: E731
        threads.append(threading.Thread(target=finish))
        threads[-1].start()
    return futures, threads


def grouped(groups: str) -> list:
    return [dataclasses.replace(s, group=g) for s, g in zip(Planner(0).plan(["p"] * len(groups), ["c"] * len(groups), 0),
                                                            groups)]


def test_paintings_are_judged_as_they_are_ready_of_any_group_and_the_wait_is_counted_blocked():
    """Two groups: a's first painting at once, its second 0.4 s in, b's two 0.1 and 0.2 s in. Whatever is
    ready comes out whenever asked, across groups (b's first before a's slowest), every sample once; the
    waits add up to the time the renders took, and the loop blocks instead of polling (a handful of
    readiness checks, not millions)."""
    from salon.train import reward as reward_module

    samples = grouped("aabb")
    futures, threads = finishing([None, 0.4, 0.1, 0.2])
    checks = {"n": 0}
    real_ready = reward_module._ready

    def counting(items, whole):
        checks["n"] += 1
        return real_ready(items, whole)

    reward_module._ready = counting
    try:
        out = list(reward_module._batches_as_ready(list(zip(samples, futures)), lambda: []))
    finally:
        reward_module._ready = real_ready
        for t in threads:
            t.join()
    assert [[s.index for s in own] for own, _, _ in out] == [[0], [2], [3], [1]]
    assert all(ahead == [] for _, ahead, _ in out)
    assert sum(w for _, _, w in out) >= 0.35  # the renders took 0.4 s after the loop began: all of it waited
    assert out[0][2] == 0 and out[1][2] >= 0.05 and checks["n"] < 50


def test_a_call_waits_for_its_least_batch_unless_that_is_all_it_has_left():
    """reward.judge_min_batch 3, the same renders: nothing comes out alone at first; three at 0.2 s (a's
    first with b's two), then a's slowest alone, the last the call has."""
    from salon.train import reward as reward_module

    samples = grouped("aabb")
    futures, threads = finishing([None, 0.4, 0.1, 0.2])
    out = list(reward_module._batches_as_ready(list(zip(samples, futures)), lambda: [], least=3))
    for t in threads:
        t.join()
    assert [sorted(s.index for s in own) for own, _, _ in out] == [[0, 2, 3], [1]]
    assert out[0][2] >= 0.15


def test_with_judge_as_rendered_off_a_group_comes_out_once_all_of_it_is_ready():
    """The same renders, reward.judge_as_rendered false: b whole once its second painting exists, then a
    once its slowest does; a's first painting waits for it."""
    from salon.train import reward as reward_module

    samples = grouped("aabb")
    futures, threads = finishing([None, 0.4, 0.1, 0.2])
    out = list(reward_module._batches_as_ready(list(zip(samples, futures)), lambda: [], whole=True))
    for t in threads:
        t.join()
    assert [[s.group for s in own] for own, _, _ in out] == [["b", "b"], ["a", "a"]]
    assert sum(w for _, _, w in out) >= 0.35


def test_later_calls_paintings_come_with_this_calls_or_alone_while_none_of_its_own_is_ready():
    """grpo.update_per_group: this call's group c waits 0.3 s for its paintings; the later group d's are
    ready at once and come out alone, then (once judged, `later()` no longer has them) c's, as they finish."""
    from salon.train import reward as reward_module

    mine, later = grouped("cc"), grouped("dd")
    futures, threads = finishing([0.3, 0.3])
    ready_later = [(s, finishing([None])[0][0]) for s in later]
    judged: list = []
    out = []
    for own, ahead, waited in reward_module._batches_as_ready(
            list(zip(mine, futures)), lambda: [x for x in ready_later if x[0] not in judged]):
        judged += ahead
        out.append(([s.group for s in own], [s.group for s in ahead], waited))
    for t in threads:
        t.join()
    assert out[0][:2] == ([], ["d", "d"]) and sum(w for _, _, w in out) >= 0.2
    assert [g for own, _, _ in out[1:] for g in own] == ["c", "c"] and all(not ahead for _, ahead, _ in out[1:])


def test_judge_as_rendered_gives_the_rewards_of_whole_groups(tiny, render_pool, tmp_path):
    """The same completions scored group by group and painting by painting as they render: one reference
    draw per group either way, so the same rewards (float32 judge on a CPU: batch composition moves
    them by rounding only, 1e-5)."""
    prompts = ["Paint a teacup."] * 3 + ["Paint a lake."] * 3
    completions = [fenced("still_02_teacup.js"), fenced("mountain_02_collapse.js"), NOT_WEBGL,
                   fenced("koi_02_swirl.js"), fenced("still_02_teacup.js"), "I cannot paint."]
    got = {}
    for as_rendered in (False, True):
        a = adapter(tiny, render_pool, tmp_path / str(as_rendered), judge_as_rendered=as_rendered, gate_penalty=-0.25)
        got[as_rendered], metrics = call(a, prompts, completions, rows=[0, 0, 0, 1, 1, 1])
        assert metrics["salon/none"] == 0 and "salon/time/pairwise_judge_s" in metrics
        # the slowest painting in its browser, and in the text check (OCR reads every painting that passed)
        assert metrics["salon/time/render_max_s"] > 0 and metrics["salon/time/ocr_max_s"] > 0
        for part in ("render", "ocr"):  # and their means, at most the slowest
            assert 0 < metrics[f"salon/time/{part}_mean_s"] <= metrics[f"salon/time/{part}_max_s"]
    assert got[True] == pytest.approx(got[False], abs=1e-5)
    assert got[True][2] == got[True][5] == -0.25 and all(r > 0 for r in (got[True][0], got[True][3]))


def test_prefetch_in_waves_renders_each_sketch_once_and_the_reward_uses_them(tiny, render_pool, tmp_path):
    """grpo.generation_waves: the first wave's paintings start rendering, then the whole batch is
    prefetched as after any generation; nothing is rendered twice, not even at reward time, and the
    rewards are those of a call that rendered everything itself."""
    submitted = []
    real = submit_each(render_pool)

    def counting(items):
        submitted.extend(items)
        return real(items)

    prompts = ["Paint a teacup."] * 2 + ["Paint a lake."] * 2
    completions = [fenced("still_02_teacup.js"), fenced("mountain_02_collapse.js"), fenced("koi_02_swirl.js"),
                   "I cannot paint."]
    a = adapter(tiny, render_pool, tmp_path / "waves", render=counting)
    a.prefetch(prompts[:2], completions[:2], step=0)  # the first wave
    assert len(submitted) == 2
    a.prefetch(prompts, completions, step=0)  # after the whole generation: only the new ones
    assert len(submitted) == 3 and len(set(submitted)) == 3  # the fourth has no sketch: the static gate
    got, _ = call(a, prompts, completions, rows=[0, 0, 1, 1])
    assert len(submitted) == 3  # the reward took every painting from the prefetch
    want, _ = call(adapter(tiny, render_pool, tmp_path / "plain"), prompts, completions, rows=[0, 0, 1, 1])
    assert got == pytest.approx(want, abs=1e-5)


def test_a_whole_step_prefetched_serves_each_micro_batch_without_rendering_again(tiny, render_pool, tmp_path):
    """grpo.update_per_group: the step's completions are prefetched at once, without their rows (TRL lays
    each row's group side by side), then the reward comes a micro-batch (one row) at a time. One subject
    in two rows, every completion a stand-in example: the reward renders nothing, and each completion
    is its own render, though all drew the same example."""
    submitted = []
    real = submit_each(render_pool)

    def counting(items):
        submitted.extend(items)
        return real(items)

    planner = ExampleSketches(Planner(0), share=1.0, files=["still_02_teacup.js"])
    a = adapter(tiny, render_pool, tmp_path, render=counting, planner=planner)
    prompts, completions = ["Paint a teacup."] * 4, ["first", "second", "third", "fourth"]
    a.prefetch(prompts, completions, step=3, group_size=2)
    assert len(submitted) == 4 and len(set(submitted)) == 4
    rewards = [call(a, prompts[k:k + 2], completions[k:k + 2], rows=[row] * 2, step=3)[0]
               for k, row in ((0, 17), (2, 40))]
    assert len(submitted) == 4  # every painting came from the prefetch
    assert all(r > 0 for pair in rewards for r in pair)
    df = load_rollouts(tmp_path, images=False)
    assert df["substituted_example"].tolist() == ["still_02_teacup.js"] * 4 and df["code"].nunique() == 4


def test_duplicate_sketches_in_a_step_share_one_render(tiny, render_pool, tmp_path):
    """A collapsed policy writes one sketch many times: in a step (one render seed a prompt) it is one
    painting, rendered once and given to each completion, across reward calls too."""
    submitted = []
    real = submit_each(render_pool)

    def counting(items):
        submitted.extend(items)
        return real(items)

    a = adapter(tiny, render_pool, tmp_path, render=counting)
    same = fenced("still_02_teacup.js")
    first, _ = call(a, ["Paint a teacup."] * 2, [same, same], rows=[0, 0], step=1)
    second, _ = call(a, ["Paint a teacup."] * 2, [same, same], rows=[1, 1], step=1)
    assert len(submitted) == 1
    assert first[0] == pytest.approx(first[1], abs=1e-6) and all(r > 0 for r in first + second)
    call(a, ["Paint a teacup."], [same], rows=[0], step=2)  # the next step renders its own
    assert len(submitted) == 2


def test_paintings_are_prepared_once_rendered_and_never_raise():
    """The adapter decodes and measures each PNG as its render finishes (off the judge's thread): the
    same image and composition as preparing at scoring time, (None, None) for no PNG, an undecodable one
    or a render future that raised."""
    import io
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from PIL import Image

    from salon.curate.sandbox.render import RenderResult
    from salon.judges.image_judges import composition
    from salon.train.reward import prepared_when_rendered
    from salon.train.scoring import decode

    buf = io.BytesIO()
    Image.new("RGBA", (40, 30), (200, 10, 10, 128)).save(buf, "PNG")
    png = buf.getvalue()
    pool = ThreadPoolExecutor(max_workers=2)
    later, failing, garbled = Future(), Future(), Future()
    prepared = [prepared_when_rendered(x, pool) for x in (RenderResult(ok=True, png=png), later, failing, garbled,
                                                           RenderResult(ok=False, violations=["x"]))]
    assert not prepared[1].done()  # nothing to prepare until the render is done
    threading.Timer(0.05, later.set_result, [RenderResult(ok=True, png=png)]).start()
    failing.set_exception(RuntimeError("render worker lost"))
    garbled.set_result(RenderResult(ok=True, png=png[:40]))
    got = [p.result(timeout=10) for p in prepared]
    expect = decode(png)
    for image, measured in got[:2]:
        assert image.mode == "RGB" and np.array_equal(np.asarray(image), np.asarray(expect))
        assert measured == composition(expect)
    assert got[2:] == [(None, None)] * 3
    pool.shutdown()


@pytest.mark.parametrize("as_rendered", [True, False])
def test_a_call_waiting_for_its_paintings_judges_the_next_groups_and_their_calls_find_them_scored(
        tiny, render_pool, tmp_path, as_rendered):
    """grpo.update_per_group: the step is prefetched, then the reward comes a group at a time. The first
    group's paintings are held back until the later group's are all judged: the first call judges them
    while it waits, the later call finds them scored and judges nothing, every painting is judged once,
    and the rewards are those of a call that scored everything itself (float32 judge on a CPU: 1e-5).
    With reward.judge_as_rendered false, the later group is judged whole."""
    import threading

    teacup = (EXAMPLES / "still_02_teacup.js").read_text()
    judged_ahead = threading.Event()
    real = submit_each(render_pool)

    def held(items):  # the first group's paintings (the teacup prompt) come out once a later group is judged
        out = []
        for (code, _), future in zip(items, real(items)):
            proxy = Future()

            def finish(done, proxy=proxy, first=teacup.strip() in code):
                def hand_over():
                    if first:
                        judged_ahead.wait(60)
                    proxy.set_result(done.result())
                threading.Thread(target=hand_over, daemon=True).start()
            future.add_done_callback(finish)
            out.append(proxy)
        return out

    prompts = ["Paint a teacup."] * 2 + ["Paint a lake."] * 2
    completions = [fenced("still_02_teacup.js"), f"Another.\n```javascript\n{teacup}\n// the second\n```",
                   fenced("koi_02_swirl.js"), fenced("mountain_02_collapse.js")]
    a = adapter(tiny, render_pool, tmp_path / "ahead", render=held, judge_as_rendered=as_rendered)
    scored, batches = [], []
    score = a.scorer.score

    def counting(samples, results, step, prepared=None):
        out = score(samples, results, step, prepared)
        scored.extend(s.completion for s in samples)
        batches.append(len(samples))
        if sum(c in scored for c in completions[2:]) == 2:  # the later group whole, in one batch or more
            judged_ahead.set()
        return out

    a.scorer.score = counting
    a.prefetch(prompts, completions, step=2, group_size=2)
    first, metrics = call(a, prompts[:2], completions[:2], rows=[0, 0], step=2)
    assert judged_ahead.is_set() and metrics["salon/time/judge_ahead_s"] > 0
    assert sorted(scored) == sorted(completions)  # its own group, and the next one ahead of its call
    assert as_rendered or batches == [2, 2]  # whole groups: the later one, then its own
    assert metrics["salon/time/judge_calls"] == len(batches)  # every batch the judge was called with
    second, metrics = call(a, prompts[2:], completions[2:], rows=[1, 1], step=2)
    assert len(scored) == 4 and metrics["salon/time/judge_s"] == metrics["salon/time/judge_calls"] == 0  # found scored
    plain = adapter(tiny, render_pool, tmp_path / "plain")
    want = [call(plain, prompts[k:k + 2], completions[k:k + 2], rows=[row] * 2, step=2)[0]
            for k, row in ((0, 0), (2, 1))]
    assert first + second == pytest.approx(want[0] + want[1], abs=1e-5) and all(r > 0 for r in first + second)
    df = load_rollouts(tmp_path / "ahead", images=False)
    assert sorted(df["completion"]) == sorted(completions) and df["judge_reason"].isna().all()


def test_completions_that_end_early_are_prefetched_in_their_rows_groups():
    """The compiled engine's on_finished: rows 3 and 5 of a batch of 8 completions, 2 a dataset row, are
    decoded as TRL decodes them and prefetched as rows 1 and 2 (their groups), at the step TRL is on."""
    from types import SimpleNamespace

    from salon.train.reward import prefetching_generated

    asked = []
    adapter = SimpleNamespace(prefetch=lambda *a, **k: asked.append((a, k)))
    tokenizer = SimpleNamespace(batch_decode=lambda ids, skip_special_tokens: [f"text{i}" for i in ids])
    trainer = SimpleNamespace(processing_class=tokenizer, state=SimpleNamespace(global_step=4), num_generations=2)
    prefetching_generated(adapter, trainer)(["p3", "p5"], [[3], [5]], [3, 5])
    assert asked == [((["p3", "p5"], ["text[3]", "text[5]"], 4, 2), {"rows": [1, 2]})]
