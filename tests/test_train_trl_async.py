"""TRL's async trainer with salon's reward (`grpo.trainer: trl_async`, salon.train.trl_async; issue 57 point 6).

TRL's own rollout worker (`AsyncRolloutWorker`, its spawned child process and asyncio loops) generates
groups against a loopback stand-in of vLLM's HTTP server (tests/vllm_standin.py: POST /v1/completions,
the one endpoint the worker calls, answered by a tiny transformers model built from a config) and scores
them with salon's `AsyncReward`, pickled and unpickled here before the worker pickles it again for its
child. In the child the reward renders in real Chromium and reaches the judge (the cheap `measures`
judge) through a `JudgeServer` on 127.0.0.1 in this process, with a bearer token.

What stands in, and why: vLLM cannot run on these machines, nor CUDA. `AsyncRolloutWorker.__init__`
refuses to start unless vLLM is importable, though neither it nor its child imports vLLM; that one check
(`async_rollout_worker.is_vllm_available`) is patched to True. salon's trainer class is built on TRL's
as train_async builds it (the reward in TRL's worker, the reward's statistics in its log), with TRL's
peak-FLOPs lookup (which asks CUDA for the card's name) patched and its injectable weight transfer a
no-op (NCCL into a vLLM server); it is not trained: its loss packs rows with FlashAttention-3 kernels,
which need CUDA.
"""

from __future__ import annotations

import importlib.util
import json
import math
import pickle
import queue
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from salon.curate.sandbox import gate
from salon.curate.sandbox.render import RenderResult
from salon.judges.pairwise_remote import JudgeServer, RemoteJudge
from salon.judges.winrate import draw_references
from salon.models.names import resolve_model
from salon.pool.errors import ConfigError
from salon.train.config import load_config
from salon.train.record.archive import load_rollouts
from salon.train.recipe import build_dataset, build_judge, build_references, build_render_backend, build_scorer
from salon.train.rollout import Planner, completion_text
from salon.train.scoring import decode, judge_safely
from salon.train.smoke import ExampleSketches
from salon.train.config_trl_async import async_args, async_grpo_package
from salon.train.trl_async import METRICS_FILE, AsyncReward, MetricsTail, parse_answers_as_qwen
from train_support import SMOKE
from vllm_standin import VLLMStandIn

pytestmark = pytest.mark.browser

STEP = 3  # the trainer's step as the judge service tells it
TOKEN = "test-token-0123456789abcdef"
EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"
# smoke.yaml, as a trl_async run would take it: the reward's settings are what matter here
ASYNC = ["grpo.trainer=trl_async", "grpo.use_cpu=false", "grpo.scale_rewards=group", "judge.name=measures",
         "judge.model=null", "grpo.num_generations=2", "grpo.max_completion_length=24", "render.browsers=1",
         "smoke.example_files=[still_02_teacup.js, jellyfish_01_bell.js]", "data.repeat=8"]


def config(out: Path, *more: str):
    return load_config(SMOKE, [f"output_dir={out}", *ASYNC, *more])


def reward_for(cfg, service) -> AsyncReward:
    """The reward as train_async builds it (the recipe's builders, pickled by name)."""
    return AsyncReward(cfg, service["server"].url, TOKEN, service["judge"].name, service["judge"].prompt_version,
                       build_scorer=build_scorer, build_render_backend=build_render_backend)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """The judge service as train_async starts it, for a run folder with its references recorded."""
    out = tmp_path_factory.mktemp("async") / "run"
    cfg = config(out)
    out.mkdir(parents=True)
    judge, refs = build_judge(cfg, out), build_references(cfg, out)
    server = JudgeServer(judge, refs, TOKEN, step=lambda: STEP).start()
    yield {"cfg": cfg, "out": out, "judge": judge, "refs": refs, "server": server}
    server.close()


@pytest.fixture(scope="module")
def rolled(service, tmp_path_factory):
    """Four scored rollouts (two groups) from TRL's rollout worker, and what it measured."""
    from transformers import AutoTokenizer

    async_grpo_package()  # TRL's async package, imported without its "experimental" warning
    from trl.experimental.async_grpo import async_rollout_worker

    cfg, out = service["cfg"], service["out"]
    reward = reward_for(cfg, service)
    shipped = pickle.loads(pickle.dumps(reward))
    policy = resolve_model(cfg.policy.model, out)
    tokenizer = parse_answers_as_qwen(AutoTokenizer.from_pretrained(policy))
    args = async_args(cfg, out)
    standin = VLLMStandIn(policy).start()
    patch = pytest.MonkeyPatch()
    patch.setattr(async_rollout_worker, "is_vllm_available", lambda *a, **k: True)  # the one stand-in (module doc)
    # the arguments AsyncGRPOTrainer gives its worker, from the AsyncGRPOConfig salon built
    worker = async_rollout_worker.AsyncRolloutWorker(
        model_name=str(policy), dataset=build_dataset(cfg), reward_funcs=[shipped], processing_class=tokenizer,
        eos_token_ids=[tokenizer.eos_token_id], num_generations=args.num_generations, max_inflight_tasks=2,
        queue_maxsize=0, vllm_server_url=standin.url, max_tokens=args.max_completion_length,
        temperature=args.temperature, top_p=args.top_p, top_k=args.top_k, request_timeout=60,
        chat_template_kwargs=args.chat_template_kwargs, child_ready_timeout=120)
    samples, deadline = [], time.monotonic() + 150
    try:
        worker.start()
        while len(samples) < 4:
            worker.check_health(stale_after_s=120)
            try:
                samples.append(worker.rollout_buffer.get(timeout=2))
            except queue.Empty:
                assert time.monotonic() < deadline, "the rollout worker scored no 4 rollouts in 150 s"
    finally:
        worker.stop()
        standin.close()
        patch.undo()
    measured = []
    while True:
        try:
            measured.append(worker.metrics_queue.get(timeout=0.5))
        except queue.Empty:
            break
    return {"samples": samples, "measured": measured, "requests": standin.requests, "reward": reward}


def expected_totals(cfg, refs, judge, samples, archive) -> list[float | None]:
    """What salon's Scorer, with the judge in this process, gives for the worker's completions: planned
    as the reward plans them, each painting the one the worker's renderer made (read from the archive;
    SwiftShader's fills differ by a few pixels between renders, the judge's inputs must not)."""
    scorer = build_scorer(cfg, judge, refs)
    planner = ExampleSketches(Planner(cfg.seed), cfg.smoke.examples, cfg.smoke.example_files)
    painted = {(r.code, r.seed): r for r in archive.itertuples()}
    totals = []
    for group in sorted({s.group_id for s in samples}):
        mine = [s for s in samples if s.group_id == group]
        texts = [completion_text(s.completion) for s in mine]
        row = archive[archive.completion == texts[0]].iloc[0]
        planned = planner.plan([s.prompt for s in mine], texts, STEP, [int(row["row"])] * len(mine))
        results = []
        for p in planned:
            static = gate.static_violations(p.code)
            if static:
                results.append(RenderResult(ok=False, violations=static))
                continue
            done = painted[(p.code, p.seed)]  # the same sketch and seed the worker's reward rendered
            results.append(RenderResult(ok=bool(done.gate_passed), violations=list(done.violations), png=done.image,
                                        unavailable=bool(done.render_unavailable)))
        totals += [s.total for s in scorer.score(planned, results, STEP)]
    return totals


def test_trl_rollout_worker_scores_with_salons_reward_as_the_scorer_does(service, rolled):
    samples = rolled["samples"]
    assert len({s.group_id for s in samples}) == 2 and all(len(s.completion) == 1 for s in samples)
    # the stand-in was asked as the config says: TRL's payload, token ids in, salon's sampling settings
    asked = rolled["requests"][0]
    assert (asked["max_tokens"], asked["top_k"], asked["top_p"]) == (24, 20, 0.95) and asked["return_token_ids"]
    assert all(isinstance(t, int) for t in asked["prompt"]) and len(rolled["requests"]) >= 4
    archive = load_rollouts(service["out"])
    assert set(archive.step) == {STEP} and set(archive.judge) == {service["judge"].name}
    want = expected_totals(service["cfg"], service["refs"], service["judge"], samples, archive)
    got = [s.metrics["reward"] for s in samples]
    for g, w in zip(got, want, strict=True):
        assert (math.isnan(g) and w is None) or g == pytest.approx(w, abs=1e-6), (got, want)
    mine = archive[archive.completion.isin([completion_text(s.completion) for s in samples])]
    assert mine.reward_judge.notna().any(), "no painting of the worker's was judged: nothing was compared"
    assert (~mine.gate_passed).any(), "the tiny policy's own text should fail the gate (penalty, not None)"
    # salon's reward is TRL's only reward function: the sample's reward is salon's total, None as NaN
    for s in samples:
        assert s.metrics["rewards/salon_reward"] == s.metrics["reward"] or math.isnan(s.metrics["reward"])


def test_every_component_is_logged_on_its_own(service, rolled):
    cfg, out = service["cfg"], service["out"]
    components = build_scorer(cfg, service["judge"], service["refs"]).components
    archive = load_rollouts(out, images=False)
    assert {f"reward_{c}" for c in components} <= set(archive.columns)
    lines = MetricsTail(out / METRICS_FILE, from_start=True)  # what the trainer's log() reads
    stats = lines.read()
    assert stats and all(isinstance(v, float) for line in stats for v in line.values())
    for c in components:
        assert any(f"salon/{c}/mean" in line for line in stats), c
    assert any("salon/reward/mean" in line and "salon/gate_pass" in line for line in stats)
    assert lines.read() == []  # read once: the next log() takes only what came after
    # TRL's own per-sample record names salon's reward function
    assert all("rewards/salon_reward" in s.metrics for s in rolled["samples"])
    assert any("rollout/score_s" in m for m in rolled["measured"])


def test_a_failed_render_is_none_and_a_gate_failure_its_penalty(service, tmp_path):
    cfg = config(tmp_path / "run", "render.chromium=/nonexistent/chromium", "smoke.examples=0")
    (tmp_path / "run").mkdir()
    build_references(cfg, tmp_path / "run")
    reward = pickle.loads(pickle.dumps(reward_for(cfg, service)))
    sketch = f"Here it is.\n```javascript\n{(EXAMPLES / 'still_02_teacup.js').read_text()}\n```"
    prompt = [{"role": "user", "content": "paint a teacup"}]
    try:
        got = reward([prompt, prompt], [[{"role": "assistant", "content": sketch}],
                                        [{"role": "assistant", "content": "no sketch at all"}]],
                     completion_ids=[[1], [2]], subject=["peach hibiscus"] * 2, row=[0, 0])
        assert got == [None, cfg.reward.gate_penalty]
        row = load_rollouts(tmp_path / "run", images=False).set_index("completion").loc[sketch]
        assert row.render_unavailable and list(row.missing) == ["render"]
        state = pickle.loads(pickle.dumps(reward)).__dict__  # used: still only its config travels
        assert set(state) == {"__name__", "cfg", "judge_url", "token", "judge_name", "prompt_version", "build_scorer",
                              "build_render_backend", "_adapter"}
        assert state["_adapter"] is None and state["__name__"] == "salon_reward"
    finally:
        reward.close()


def test_a_judge_that_refuses_the_reward_makes_the_sample_missing(service, make_png):
    image = decode(make_png(1, size=96))
    draw = draw_references(service["refs"], k=2, seed=0)
    stranger = RemoteJudge(service["server"].url, "not-the-token-at-all", "measures", "v")
    scores, reasons = judge_safely(stranger, [image], [draw])
    assert scores == [None] and "HTTP 401" in reasons[0]
    friend = RemoteJudge(service["server"].url, TOKEN, service["judge"].name, service["judge"].prompt_version)
    remote = judge_safely(friend, [image], [draw])[0]
    assert remote == judge_safely(service["judge"], [image], [draw])[0] and remote[0] is not None


def call(url: str, body: dict | None = None, token: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_judge_service_refuses_strangers_and_serves_only_scoring(service, make_png):
    url = service["server"].url
    assert url.startswith("http://127.0.0.1:")
    body = {"groups": [{"candidates": [], "references": [service["refs"].references[0].id]}]}
    for token in (None, "wrong-token", TOKEN[:-1]):
        assert call(url + "/health", token=token)[0] == 401
        assert call(url + "/judge", body, token=token)[0] == 401
    status, health = call(url + "/health", token=TOKEN)
    assert status == 200 and health["step"] == STEP and health["judge"] == service["judge"].name
    assert call(url + "/judge", body, token=TOKEN) == (200, {"verdicts": [[]]})
    unknown = {"groups": [{"candidates": [], "references": ["not-a-reference"]}]}
    assert call(url + "/judge", unknown, token=TOKEN)[0] == 400
    assert call(url + "/render", body, token=TOKEN)[0] == 404


def test_load_config_refuses_what_trl_async_cannot_honour_all_at_once(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config(SMOKE, ["grpo.trainer=trl_async", "grpo.generation=compiled", "grpo.update_per_group=true",
                            "grpo.max_staleness=1", "grpo.generation_device=cuda:1", "grpo.beta=0.1",
                            "grpo.loss_type=grpo", "grpo.generation_waves=2", "grpo.extra.num_iterations=2"])
    text = "\n".join(e.value.problems)
    for says in ("grpo.generation=compiled cannot apply", "grpo.generation_waves tune salon's compiled engine",
                 "grpo.update_per_group is the compiled engine's", "grpo.max_staleness=1 is the compiled engine's",
                 "give it as grpo.extra.max_staleness", "grpo.generation_device='cuda:1'", "set grpo.beta=0",
                 "grpo.loss_type=grpo cannot apply", "set grpo.scale_rewards=group",
                 "grpo.use_cpu cannot be true",  # smoke.yaml trains on a CPU
                 "grpo.num_iterations: neither a salon grpo field nor a field of TRL's AsyncGRPOConfig"):
        assert says in text, says
    # TRL's own staleness is an AsyncGRPOConfig field under grpo.extra, and only under trl_async
    with pytest.raises(ConfigError, match="salon has its own grpo.max_staleness"):
        load_config(SMOKE, ["grpo.extra.max_staleness=2"])


def test_salons_settings_carry_over_to_trls_async_config(tmp_path):
    cfg = config(tmp_path / "run", "grpo.extra.max_staleness=2", "grpo.max_inflight_tasks=6", "policy.dtype=bfloat16",
                 "grpo.vllm_server_base_url=http://127.0.0.1:8011", "grpo.epsilon_high=0.28")
    args = async_args(cfg, tmp_path / "run")
    g = cfg.grpo
    assert (args.max_staleness, args.max_inflight_tasks, args.epsilon_high) == (2, 6, 0.28)
    assert (args.num_generations, args.max_completion_length, args.top_k, args.top_p) == (2, 24, g.top_k, g.top_p)
    assert (args.learning_rate, args.max_steps, args.save_steps, args.save_total_limit) == (
        g.learning_rate, g.max_steps, g.save_steps, None)
    assert (args.dtype, args.vllm_server_base_url, args.seed) == ("bfloat16", "http://127.0.0.1:8011", cfg.seed)
    assert args.chat_template_kwargs == {"enable_thinking": False} and args.gradient_checkpointing is False
    assert g.max_staleness == "auto"  # salon's own stays the compiled engine's


def test_the_recipe_hands_trl_async_runs_over_and_refuses_them_here_with_every_reason(tmp_path):
    from salon.train.recipe import train

    cfg = config(tmp_path / "run", "reward.absolute=hpsv3", "reward.absolute_kwargs.model=tiny:hpsv3",
                 "policy.attn_implementation=eager")
    with pytest.raises(ConfigError) as e:
        train(cfg)
    text = "\n".join(e.value.problems)
    assert "reward.absolute=hpsv3 would run in TRL's rollout worker, which sees no GPU" in text
    assert "policy.attn_implementation=eager" in text
    if importlib.util.find_spec("vllm") is None:  # these machines: TRL's worker and weight transfer need it
        assert "grpo.trainer=trl_async needs vllm in the training process too" in text
    assert not (tmp_path / "run").exists()  # refused before anything was written


class NoWeightSync:
    """TRL's WeightTransferProtocol doing nothing: NCCL into a vLLM server cannot exist here."""

    def init_weight_transfer(self): ...
    def pause(self): ...
    def send_weights(self, iterator): ...
    def resume(self): ...
    def destroy(self): ...


def test_salons_async_trainer_hands_the_reward_to_trls_worker_and_logs_its_statistics(service, tmp_path):
    """Built as train_async builds it, with stand-ins only where a card is asked for: TRL's peak-FLOPs
    lookup (it asks CUDA for the card's name), the vLLM check of the worker's constructor (module doc),
    and TRL's injectable weight transfer (NoWeightSync)."""
    from transformers import AutoTokenizer

    async_grpo_package()
    from trl.experimental.async_grpo import async_grpo_trainer, async_rollout_worker

    from salon.train.recipe import lora_config, salon_callback
    from salon.train.trl_async import append_metrics, trainer_class

    out = tmp_path / "run"
    cfg = config(out, "grpo.bf16=false", "grpo.report_to=[]")  # a CPU: no bf16
    out.mkdir()
    policy = resolve_model(cfg.policy.model, out)
    append_metrics(out / METRICS_FILE, {"salon/judge/mean": 0.1})  # an earlier run's: logged by that run
    reward = reward_for(cfg, service)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(async_grpo_trainer, "get_peak_flops_per_device", lambda *a: None)
        patch.setattr(async_rollout_worker, "is_vllm_available", lambda *a, **k: True)
        trainer = trainer_class()(
            model=str(policy), reward_funcs=[reward], args=async_args(cfg, out), train_dataset=build_dataset(cfg),
            processing_class=parse_answers_as_qwen(AutoTokenizer.from_pretrained(policy)),
            peft_config=lora_config(cfg), reward_metrics=out / METRICS_FILE, weight_transfer=NoWeightSync(),
            callbacks=[salon_callback(cfg, {})])
    assert isinstance(trainer.rollout_worker, async_rollout_worker.AsyncRolloutWorker)
    handed = trainer.rollout_worker._loop_kwargs  # what its child process is given
    assert handed["reward_funcs"] == [reward] and pickle.loads(pickle.dumps(handed))  # what its start() checks
    assert (handed["num_generations"], handed["max_tokens"], handed["top_k"], handed["top_p"]) == (2, 24, 20, 0.95)
    assert type(trainer.model).__name__ == "PeftModelForCausalLM" and trainer.args.save_total_limit is None
    for judge, render_max in ((0.5, 2.0), (0.7, 3.0)):  # two reward calls in the worker since the last log
        append_metrics(out / METRICS_FILE, {"salon/judge/mean": judge, "salon/time/render_max_s": render_max})
    trainer.log({"loss": 1.0})
    logged = trainer.state.log_history[-1]
    assert logged["salon/judge/mean"] == pytest.approx(0.6) and logged["salon/time/render_max_s"] == 3.0
