"""The trainer's config: dataclasses validated on construction, loaded from YAML with overrides.

    cfg = load_config("train/configs/smoke.yaml", overrides=["grpo.max_steps=3", "output_dir=runs/x"])
    cfg.grpo.beta, cfg.judge.references, cfg.reward.weights ...

Every section checks itself in `__post_init__`; `load_config` builds all sections, collects the
problems of every one of them (and unknown keys, and bad override syntax), and raises one
`ConfigError` listing them all. Overrides are `dotted.key=value`, the value read as YAML
(`grpo.beta=0.01`, `data.subjects=[koi, peony]`, `judge.kwargs.device=cuda`).

Model fields take a local folder, a Hub id, `tiny:ARCH`: a tiny random model built from a
config into the output folder (salon.models.tiny), so `smoke.yaml` runs fully offline on a CPU,
or `random:NAME` (random:qwen3-1.7b, random:qwen2.5-vl-7b): the named architecture in its real
shape with random weights (salon.models.shapes), for benchmarks and smoke runs on a GPU node.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass, field, fields
from pathlib import Path

from salon.curate.sandbox.gpu import GPU_FLAG_SETS, GPU_MODES
from salon.curate.sandbox.ocr import TEXT_CHECKS
from salon.pool.errors import ConfigError

GENERATION_ENGINES = ("transformers", "compiled", "continuous_batching", "vllm_server", "vllm_colocate")
GENERATION_COMPILE = ("auto", "on", "off")
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo")
SCALE_REWARDS = ("group", "batch", "none")
IMAGE_JUDGES = ("paint_fraction", "colourfulness", "composition")
FIXED_COMPONENTS = ("gate", "length", "judge", "absolute")
RENDER_BACKENDS = ("local", "ray", "env")
DEFAULT_WEIGHTS = {"gate": 0.05, "length": 0.05, "judge": 0.9}


def _on_off(value):
    """A setting of "on"/"off"/..., as YAML 1.1 reads a bare on/off: a boolean."""
    return ("on" if value else "off") if isinstance(value, bool) else value


def _problems(cls_name: str, problems: list[str]) -> None:
    if problems:
        raise ConfigError(problems, cls_name)


@dataclass
class PolicyConfig:
    model: str = "tiny:qwen3"  # folder, Hub id, or tiny:qwen2|qwen3
    dtype: str = "auto"  # auto: bfloat16 on GPU, float32 on CPU
    attn_implementation: str = "sdpa"
    enable_thinking: bool = False  # passed to the chat template (Qwen3)

    def __post_init__(self):
        p = []
        if not self.model:
            p.append("policy.model is empty: give a folder, a Hub id or tiny:qwen3")
        if self.dtype not in ("auto", "bfloat16", "float16", "float32"):
            p.append(f"policy.dtype={self.dtype!r}: use auto, bfloat16, float16 or float32")
        _problems("policy", p)


@dataclass
class LoraSettings:
    enabled: bool = True
    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: str | list[str] = "all-linear"  # the prior art's hand list hit 10 of 40 layers

    def __post_init__(self):
        p = []
        if self.r < 1:
            p.append(f"lora.r={self.r}: must be at least 1")
        if self.alpha <= 0:
            p.append(f"lora.alpha={self.alpha}: must be positive")
        if not 0 <= self.dropout < 1:
            p.append(f"lora.dropout={self.dropout}: must be in [0, 1)")
        _problems("lora", p)


@dataclass
class GRPOSettings:
    learning_rate: float = 5e-5
    lr_scheduler_type: str = "constant_with_warmup"
    warmup_steps: int = 5
    beta: float = 0.0  # KL coefficient; >0 loads the reference (the base model, adapters off)
    num_generations: int = 8
    per_device_train_batch_size: int = 8  # completions per device per micro-step
    gradient_accumulation_steps: int = 1
    max_completion_length: int = 4096
    temperature: float = 1.0
    top_p: float = 0.95  # TRL's 1.0 / 0 defaults invented ~1 method per 11 rollouts in the prior art
    top_k: int = 20
    scale_rewards: str = "none"  # "group" shrank survivors' advantages where rejects were common
    loss_type: str = "dapo"
    max_steps: int = 200
    save_steps: int = 10
    logging_steps: int = 1
    report_to: list[str] = field(default_factory=lambda: ["trackio"])
    use_cpu: bool = False
    bf16: bool = True
    gradient_checkpointing: bool = True
    # How completions are generated: transformers (TRL's plain generate on the peft model), compiled
    # (salon.train.generation: a merged copy of the policy, static KV cache, CUDA graphs), continuous_batching
    # (transformers' paged engine, no extra package), vllm_server (a `trl vllm-serve` process on other
    # GPUs, at vllm_server_base_url), vllm_colocate (vLLM in the training process, sharing the GPU);
    # auto: compiled where the policy trains on CUDA, transformers on a CPU.
    generation: str = "auto"
    generation_compile: str = "auto"  # compiled: torch.compile the decode step (auto: on CUDA only; off: static cache only)
    generation_prompt_bucket: int = 256  # compiled: prompts left-padded to a multiple of this, so shapes repeat
    generation_attention: str = "whole"  # compiled: decode attention over the whole static cache, or the filled part
    # Completions generated at once, per process: per_device_train_batch_size x steps_per_generation (TRL's
    # default steps_per_generation is gradient_accumulation_steps). 8 prompts x 8 per optimiser step:
    # per_device_train_batch_size=8, gradient_accumulation_steps=8. A steps_per_generation above
    # gradient_accumulation_steps makes one generation feed several optimiser steps (TRL then corrects
    # with the old policy's log-probs). Give at most one of the two.
    generation_batch_size: int | None = None  # completions per generation over all processes
    steps_per_generation: int | None = None
    vllm_server_base_url: str | None = None  # vllm_server: e.g. http://127.0.0.1:8000 (default: TRL's host:port)
    vllm_gpu_memory_utilization: float = 0.3  # vllm_colocate: the card's share vLLM may take
    extra: dict = field(default_factory=dict)  # any other GRPOConfig field, passed as is

    def __post_init__(self):
        p = []
        if self.learning_rate <= 0:
            p.append(f"grpo.learning_rate={self.learning_rate}: must be positive")
        if self.beta < 0:
            p.append(f"grpo.beta={self.beta}: the KL coefficient cannot be negative")
        if self.num_generations < 2:
            p.append(f"grpo.num_generations={self.num_generations}: GRPO needs at least 2 per prompt")
        elif self.per_device_train_batch_size * self.gradient_accumulation_steps % self.num_generations:
            p.append(f"grpo.per_device_train_batch_size x gradient_accumulation_steps = "
                     f"{self.per_device_train_batch_size * self.gradient_accumulation_steps} must be a multiple "
                     f"of grpo.num_generations={self.num_generations}")
        for name in ("per_device_train_batch_size", "gradient_accumulation_steps", "max_completion_length",
                     "max_steps", "save_steps", "logging_steps"):
            if getattr(self, name) < 1:
                p.append(f"grpo.{name}={getattr(self, name)}: must be at least 1")
        if self.warmup_steps < 0:
            p.append(f"grpo.warmup_steps={self.warmup_steps}: must be 0 or more")
        if self.temperature <= 0:
            p.append(f"grpo.temperature={self.temperature}: must be positive")
        if not 0 < self.top_p <= 1:
            p.append(f"grpo.top_p={self.top_p}: must be in (0, 1]")
        if self.top_k < 0:
            p.append(f"grpo.top_k={self.top_k}: must be 0 (off) or more")
        if self.scale_rewards not in SCALE_REWARDS:
            p.append(f"grpo.scale_rewards={self.scale_rewards!r}: use one of {', '.join(SCALE_REWARDS)}")
        if self.loss_type not in LOSS_TYPES:
            p.append(f"grpo.loss_type={self.loss_type!r}: use one of {', '.join(LOSS_TYPES)}")
        if isinstance(self.report_to, str):
            self.report_to = [self.report_to]
        if self.generation not in ("auto", *GENERATION_ENGINES):
            p.append(f"grpo.generation={self.generation!r}: use auto or one of {', '.join(GENERATION_ENGINES)}")
        elif self.generation.startswith("vllm") and importlib.util.find_spec("vllm") is None:
            p.append(f"grpo.generation={self.generation}: vLLM is not installed here (`pip install vllm` on the "
                     "GPU node, a build matching its CUDA); or use generation=continuous_batching, which needs "
                     "no extra package")
        if not 0 < self.vllm_gpu_memory_utilization < 1:
            p.append(f"grpo.vllm_gpu_memory_utilization={self.vllm_gpu_memory_utilization}: a share in (0, 1)")
        self.generation_compile = _on_off(self.generation_compile)
        if self.generation_compile not in GENERATION_COMPILE:
            p.append(f"grpo.generation_compile={self.generation_compile!r}: use {', '.join(GENERATION_COMPILE)}")
        if self.generation_attention not in ("filled", "whole"):
            p.append(f"grpo.generation_attention={self.generation_attention!r}: use filled or whole")
        if self.generation_prompt_bucket < 1:
            p.append(f"grpo.generation_prompt_bucket={self.generation_prompt_bucket}: must be at least 1")
        if self.generation_batch_size is not None and self.steps_per_generation is not None:
            p.append("grpo.generation_batch_size and grpo.steps_per_generation both set: give one (TRL derives the other)")
        if self.generation_batch_size is not None and (self.generation_batch_size < 1 or
                                                       self.generation_batch_size % self.num_generations):
            p.append(f"grpo.generation_batch_size={self.generation_batch_size}: a positive multiple of "
                     f"grpo.num_generations={self.num_generations} (whole groups)")
        if self.steps_per_generation is not None and self.steps_per_generation < 1:
            p.append(f"grpo.steps_per_generation={self.steps_per_generation}: must be at least 1")
        _problems("grpo", p)


@dataclass
class DataSettings:
    subjects: list[str] = field(default_factory=lambda: ["peach hibiscus"])  # names from the subject book
    subjects_file: str | None = None  # YAML subject book; default: the bundled curate/subjects.yaml
    repeat: int = 64  # dataset rows = subjects x repeat (one row = one prompt = one group)

    def __post_init__(self):
        p = []
        if not self.subjects:
            p.append("data.subjects is empty: name at least one subject")
        if self.repeat < 1:
            p.append(f"data.repeat={self.repeat}: must be at least 1")
        if self.subjects_file and not Path(self.subjects_file).is_file():
            p.append(f"data.subjects_file={self.subjects_file!r}: no such file")
        _problems("data", p)


@dataclass
class JudgeSettings:
    name: str = "transformers"  # registry name or module:Class
    model: str | None = "tiny:qwen2_5_vl"  # judge model (transformers: folder / Hub id / tiny:ARCH; openai: URL)
    kwargs: dict = field(default_factory=dict)  # other fields of the backend's config
    references: str = "tiny:refs"  # folder, pulled pool release, REPO@REVISION, or tiny:refs
    k: int = 4
    mix: dict = field(default_factory=lambda: {"love": 0.5, "okay": 0.5})

    def __post_init__(self):
        p = []
        if not self.name:
            p.append("judge.name is empty: use transformers, openai or module:Class")
        if self.k < 1:
            p.append(f"judge.k={self.k}: draw at least one reference")
        if not self.references:
            p.append("judge.references is empty: give a pool release (REPO@REVISION) or a folder")
        if not self.mix or any(not isinstance(w, (int, float)) or w < 0 for w in self.mix.values()):
            p.append(f"judge.mix={self.mix}: give non-negative tier weights, e.g. {{love: 0.5, okay: 0.5}}")
        _problems("judge", p)


@dataclass
class RewardSettings:
    # total = gate_penalty if the gate fails, else sum(weight * component); 0-weight ones are logged only.
    # `weights` is the one place a weight is given; components it does not name keep DEFAULT_WEIGHTS,
    # so `--set reward.weights.colourfulness=0.2` adds a weight without dropping the judge's
    weights: dict = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    gate_penalty: float = 0.0
    image_judges: list[str] = field(default_factory=lambda: list(IMAGE_JUDGES))  # computed and logged
    absolute: str | None = None  # an ImageJudge (registry name / module:Class) scoring 0..1, e.g. hpsv3; weight: weights.absolute
    absolute_kwargs: dict = field(default_factory=dict)
    length_min_chars: int = 600  # length component 0 below, ramps to 1 at length_full_chars,
    length_full_chars: int = 12000  # stays 1 until length_max_chars, 0 above (the prior art's ramp
    length_max_chars: int = 24000  # in tokens x 4)

    def __post_init__(self):
        p = []
        if isinstance(self.image_judges, dict):
            p.append("reward.image_judges lists the image judges to compute (e.g. [paint_fraction, "
                     "colourfulness]); give their weights under reward.weights, e.g. reward.weights.colourfulness=0.2")
            self.image_judges = list(self.image_judges)
        for name in self.image_judges:
            if name not in IMAGE_JUDGES:
                p.append(f"reward.image_judges: {name} is unknown; use {', '.join(IMAGE_JUDGES)}")
        if not isinstance(self.weights, dict):
            p.append(f"reward.weights={self.weights!r}: give a mapping, e.g. {{judge: 0.9, colourfulness: 0.1}}")
            self.weights = {}
        self.weights = {**DEFAULT_WEIGHTS, **self.weights}
        known = FIXED_COMPONENTS + IMAGE_JUDGES
        for name, w in self.weights.items():
            if name not in known:
                p.append(f"reward.weights.{name}: unknown component; use {', '.join(known)}")
            elif isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0:
                p.append(f"reward.weights.{name}={w}: must be a number >= 0")
            elif w > 0 and name in IMAGE_JUDGES and name not in self.image_judges:
                p.append(f"reward.weights.{name}={w}, but reward.image_judges={self.image_judges} does not "
                         f"compute {name}: add it there, or set its weight to 0")
        if self.weights.get("absolute") and not self.absolute:
            p.append("reward.weights.absolute is set but reward.absolute names no scorer")
        if self.absolute == "hpsv3":  # model (folder, tiny:hpsv3, random:hpsv3, URL), prompt, batch_size, dtype...
            from salon.judges.hpsv3_config import config_problems

            p += config_problems(self.absolute_kwargs)
        if not 0 <= self.length_min_chars < self.length_full_chars <= self.length_max_chars:
            p.append("reward.length_*_chars: need 0 <= length_min_chars < length_full_chars <= length_max_chars")
        _problems("reward", p)

    def weight(self, component: str) -> float:
        return float(self.weights.get(component, 0.0))


@dataclass
class SmokeSettings:
    # smoke runs and benchmarks only (salon.train.smoke): a random policy writes no sketch, so this
    # share of each group renders a bundled example instead; each such rollout is marked in the archive
    examples: float = 0.0
    example_files: list[str] = field(default_factory=list)  # names in curate/examples/ (default: all)

    def __post_init__(self):
        p = []
        if not 0 <= self.examples <= 1:
            p.append(f"smoke.examples={self.examples}: a share of each group in [0, 1] (0 = off)")
        examples = Path(__file__).resolve().parent.parent / "curate" / "examples"
        p += [f"smoke.example_files: {name} is not in curate/examples/" for name in self.example_files
              if not (examples / name).is_file()]
        _problems("smoke", p)


@dataclass
class RenderSettings:
    # where the reward's paintings are rendered (salon.train.recipe.build_render_backend):
    #   local  worker processes on this machine (`workers` x `browsers` Chromiums)
    #   ray    Ray actors on a cluster (`ray_address`, `actors`; `browsers` per actor)
    #   env    a remote `salon env serve` at `env_url` (its browsers, its --gpu)
    backend: str = "local"
    workers: int = 1  # local: render processes (each owns `browsers` Chromiums)
    browsers: int = 0  # local: per worker, 0 = one per two cores; ray: per actor, 0 = one per two reserved CPUs
    timeout_s: float = 45.0
    prefetch: bool = True  # start rendering as soon as generation returns, before TRL's logprob passes
    gpu: str = "auto"  # WebGL on the node's GPU when Chromium can draw there, else SwiftShader (salon.curate.sandbox.gpu)
    gl: str = ""  # the GPU flag set: "" = the first that draws (vulkan-canvas); vulkan-icd = exact repeats, 2D on the CPU
    text_check: str = "ocr"  # read every painting that passed the page for words (text_label); off: skip (salon.curate.sandbox.ocr)
    ray_address: str = "local"  # ray: local (a private cluster on this machine), auto, host:6379, ray://host:10001
    actors: int = 0  # ray: render actors; 0 = one per `cpus_per_actor` cluster CPUs
    cpus_per_actor: float = 2.0  # ray: CPUs each actor reserves (one SwiftShader render keeps ~1.8 busy)
    env_url: str | None = None  # env: the server, e.g. http://127.0.0.1:8000
    env_sessions: int = 4  # env: concurrent sessions; keep within the server's --max-sessions

    def __post_init__(self):
        p = []
        self.gpu = _on_off(self.gpu)
        if isinstance(self.text_check, bool):  # YAML 1.1 reads a bare off as False
            self.text_check = "ocr" if self.text_check else "off"
        if self.backend not in RENDER_BACKENDS:
            p.append(f"render.backend={self.backend!r}: use one of {', '.join(RENDER_BACKENDS)}")
        if self.gpu not in GPU_MODES:
            p.append(f"render.gpu={self.gpu!r}: use {', '.join(GPU_MODES)}")
        if self.gl and self.gl not in GPU_FLAG_SETS:
            p.append(f"render.gl={self.gl!r}: use one of {', '.join(GPU_FLAG_SETS)}, or leave it empty")
        elif self.gl and self.gpu == "off":
            p.append(f"render.gl={self.gl!r} names a GPU flag set, but render.gpu=off: drop one of them")
        elif self.gl and self.backend == "env":
            p.append(f"render.gl={self.gl!r}: with render.backend=env the server draws where its own --gpu says")
        if self.text_check not in TEXT_CHECKS:
            p.append(f"render.text_check={self.text_check!r}: use {', '.join(TEXT_CHECKS)}")
        if self.workers < 1:
            p.append(f"render.workers={self.workers}: must be at least 1")
        if self.browsers < 0:
            p.append(f"render.browsers={self.browsers}: must be 0 (one per two cores) or more")
        if self.timeout_s <= 0:
            p.append(f"render.timeout_s={self.timeout_s}: must be positive")
        for name, bad, want in (("actors", self.actors < 0, "0 (one per cpus_per_actor cluster CPUs) or more"),
                                ("cpus_per_actor", self.cpus_per_actor <= 0, "must be positive"),
                                ("env_sessions", self.env_sessions < 1, "must be at least 1")):
            if bad:
                p.append(f"render.{name}={getattr(self, name)}: {want}")
        # settings that would be ignored are refused, so a run never renders somewhere it was not told to
        if self.backend != "local" and self.workers != 1:
            p.append(f"render.workers={self.workers} sizes the local backend only; with render.backend="
                     f"{self.backend} set {'render.actors' if self.backend == 'ray' else 'render.env_sessions'}")
        if self.env_url and self.backend != "env":
            p.append(f"render.env_url is set but render.backend={self.backend}: set render.backend=env to "
                     "render on that server, or drop env_url")
        if self.backend == "ray":
            if importlib.util.find_spec("ray") is None:
                p.append("render.backend=ray: Ray is not installed here: pip install 'salon[ray]' (every node of "
                         "the cluster needs it too, with Chromium and the npm assets: ./setup.sh)")
            if not self.ray_address:
                p.append("render.ray_address is empty: give local (starts a cluster here), auto, host:6379 "
                         "or ray://host:10001")
        if self.backend == "env":
            if not self.env_url:
                p.append("render.backend=env needs render.env_url: the URL of a running `salon env serve`, "
                         "e.g. http://127.0.0.1:8000")
            elif not self.env_url.startswith(("http://", "https://", "ws://", "wss://")):
                p.append(f"render.env_url={self.env_url!r}: give an http(s):// or ws(s):// URL, "
                         "e.g. http://127.0.0.1:8000")
            if importlib.util.find_spec("openenv") is None:
                p.append("render.backend=env: the OpenEnv client is not installed here: pip install 'salon[env]'")
            if self.gpu == "on" or self.browsers:
                p.append("render.gpu and render.browsers size this machine's renderers; with render.backend=env "
                         "the server renders with its own (salon env serve --browsers N)")
        _problems("render", p)


@dataclass
class ArchiveSettings:
    hub_repo: str | None = None  # push OUTPUT_DIR/rollouts here when training ends
    private: bool = True


@dataclass
class AuditSettings:
    grid_every: int = 10  # rollout image grid every N steps (0 = never)
    window: int = 20  # steps compared (last window vs the one before) for the alarms
    correlation_max: float = 0.85  # flag two components correlated above this
    saturation_std: float = 0.01  # flag a component whose std falls below this
    reward_rise: float = 0.02  # the reward "rises" when the window mean grows by this much
    coverage_drop: float = 0.15  # relative fall of coverage that raises an alarm
    diversity_drop: float = 0.25  # relative fall of within-group diversity that raises an alarm

    def __post_init__(self):
        p = []
        if self.grid_every < 0:
            p.append(f"audit.grid_every={self.grid_every}: 0 (never) or more")
        if self.window < 1:
            p.append(f"audit.window={self.window}: must be at least 1")
        if not 0 < self.correlation_max <= 1:
            p.append(f"audit.correlation_max={self.correlation_max}: in (0, 1]")
        _problems("audit", p)


SECTIONS = {"policy": PolicyConfig, "lora": LoraSettings, "grpo": GRPOSettings, "data": DataSettings,
            "judge": JudgeSettings, "reward": RewardSettings, "smoke": SmokeSettings, "render": RenderSettings,
            "archive": ArchiveSettings, "audit": AuditSettings}


@dataclass
class TrainConfig:
    output_dir: str = "runs/salon"
    run_name: str | None = None  # default: the output folder's name
    seed: int = 0
    resume: str | None = None  # null, "latest", or a checkpoint-N folder
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    lora: LoraSettings = field(default_factory=LoraSettings)
    grpo: GRPOSettings = field(default_factory=GRPOSettings)
    data: DataSettings = field(default_factory=DataSettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    reward: RewardSettings = field(default_factory=RewardSettings)
    smoke: SmokeSettings = field(default_factory=SmokeSettings)
    render: RenderSettings = field(default_factory=RenderSettings)
    archive: ArchiveSettings = field(default_factory=ArchiveSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)

    def __post_init__(self):
        p = []
        if not self.output_dir:
            p.append("output_dir is empty")
        if self.judge.name == "transformers" and not self.judge.model:
            p.append("judge.model is required for the transformers judge")
        if not any(self.reward.weight(c) for c in ("judge", "absolute", *IMAGE_JUDGES)):
            p.append("reward: every scorer has weight 0, so only gate and length would be rewarded")
        _problems("train config", p)

    @property
    def name(self) -> str:
        return self.run_name or Path(self.output_dir).name

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _build(cls, data, where: str, problems: list[str]):
    if data is None:
        data = {}
    if not isinstance(data, dict):
        problems.append(f"{where}: expected a mapping, got {type(data).__name__}")
        return None
    names = {f.name for f in fields(cls)}
    if cls is GRPOSettings:  # any field of TRL's GRPOConfig goes under grpo. too (salon.train.trl_fields)
        from salon.train.trl_fields import split_grpo

        data, grpo_problems = split_grpo(data, names)
        problems += grpo_problems
    for key in sorted(set(data) - names):
        problems.append(f"{where}.{key}: unknown field; {_did_you_mean(key, names)}")
    try:
        return cls(**{k: v for k, v in data.items() if k in names})
    except ConfigError as e:
        problems.extend(e.problems)
    except TypeError as e:
        problems.append(f"{where}: {e}")
    return None


def _did_you_mean(key: str, names) -> str:
    from salon.train.trl_fields import nearest

    close = nearest(key, names)
    return (f"did you mean {', '.join(close)}? " if close else "") + f"known: {', '.join(sorted(names))}"


def _blame_overrides(problems: list[str], overrides: list[str]) -> tuple[list[str], bool]:
    """Problems caused by a --set override name it (`--set grpo.x: ...`), not the YAML file;
    also whether every problem was one."""
    import re

    keys = {item.partition("=")[0].strip() for item in overrides}
    blamed = []
    for p in problems:
        lead = m.group(0) if (m := re.match(r"[\w.]+", p)) else None
        from_set = p.startswith("--set ") or bool(lead) and any(
            lead == k or lead.startswith(k + ".") or k.startswith(lead + ".") for k in keys)
        blamed.append((p if p.startswith("--set ") else f"--set {p}") if from_set else p)
    return blamed, all(b.startswith("--set ") for b in blamed)


def apply_overrides(data: dict, overrides: list[str], problems: list[str]) -> dict:
    """Set `a.b.c=value` (value parsed as YAML) in a nested dict."""
    import yaml

    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            problems.append(f"--set {item!r}: write key=value, e.g. grpo.beta=0.01")
            continue
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError as e:
            problems.append(f"--set {item!r}: value is not YAML ({e})")
            continue
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                problems.append(f"--set {item!r}: {part} is not a section")
                break
        else:
            node[parts[-1]] = value
    return data


def config_from_dict(data: dict, overrides: list[str] | None = None, where: str = "train config") -> TrainConfig:
    problems: list[str] = []
    data = apply_overrides(dict(data or {}), overrides or [], problems)
    top = {f.name for f in fields(TrainConfig)}
    for key in sorted(set(data) - top):
        problems.append(f"{key}: unknown section or field; {_did_you_mean(key, top)}")
    sections = {name: _build(cls, data.get(name), name, problems) for name, cls in SECTIONS.items()}
    scalars = {k: data[k] for k in top - set(SECTIONS) if k in data}
    try:
        if not problems and all(v is not None for v in sections.values()):
            return TrainConfig(**scalars, **sections)
    except ConfigError as e:
        problems = e.problems
    problems, all_set = _blame_overrides(problems, overrides or [])
    raise ConfigError(problems, "--set" if all_set else where)


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError([f"{path}: no such config file (see train/configs/)"], "salon train")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ConfigError([f"{path} is not valid YAML: {e}"], "salon train") from None
    return config_from_dict(data, overrides, where=str(path))
