"""The HPSv3 reward model on transformers 5.x: its class, the strict loader, the original forward.

    model, processor, reward_id = load_released("ckpt/HPSv3.safetensors", "ckpt/base", dtype, "cuda")
    out = model.reward(input_ids, attention_mask, pixel_values, image_grid_thw, reward_id)  # [B, 2]
    mu, log_sigma = out[:, 0], out[:, 1]
    save_released(folder, text, vision, tokenizer, image_processor)   # a random model, released layout

HPSv3 is Qwen2-VL-7B-Instruct with a `<|Reward|>` token and an MLP head giving (mu, log sigma)
(the `hpsv3` 1.0.0 wheel, `Qwen2VLRewardModelBT`). Its one released file, `HPSv3.safetensors`, is a
complete state_dict of the transformers 4.45 class: flat `visual.*` and `model.*` keys where 5.x
has `model.visual.*` and `model.language_model.*`. The loader reads the file's key names first
and refuses, naming them, any key the model lacks or any weight the file lacks, before a byte of
weights is read; then it loads through `from_pretrained` with the renaming and checks the
loading report is empty too. A half-loaded model scores garbage quietly, so it never loads.

The forward is the original's, not 5.x's: plain sequential positions (copied to the three M-RoPE
sections, image tokens included, as 4.45 did when no position ids were given), the vision
features scattered into the image-pad positions, the last hidden state after the final norm,
and the head run in float32 on the reward token only. Verified against the 4.45.2 class on tiny
random weights (benchmarks/parity_hpsv3.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import torch
from torch import nn
from transformers import Qwen2VLForConditionalGeneration

from salon.models.hpsv3_prompt import REWARD_TOKEN
from salon.pool.errors import JudgeError

CHECKPOINT = "HPSv3.safetensors"  # the one released file
# old flat prefix -> transformers 5.x prefix; lm_head.* and rm_head.* keep their names
RELEASED_PREFIXES = (("visual.", "model.visual."), ("model.", "model.language_model."))
# the same renaming for from_pretrained, which applies every pattern in turn: the lookahead keeps
# the second from renaming what the first produced (transformers' own Qwen2-VL entry is this pair)
KEY_MAPPING = {r"^visual": "model.visual", r"^model(?!\.(language_model|visual))": "model.language_model"}
SHOWN = 8  # key names listed in an error


class HPSv3RewardModel(Qwen2VLForConditionalGeneration):
    """Qwen2-VL with HPSv3's head: Linear(h, 1024), ReLU, Dropout, Linear(1024, 16), ReLU, Linear(16, 2)."""

    # from_pretrained keeps the head in float32 whatever dtype the backbone loads in (the
    # non-strict `_keep_in_fp32_modules` only does so for float16)
    _keep_in_fp32_modules_strict = ["rm_head"]

    def __init__(self, config):
        super().__init__(config)
        hidden = config.text_config.hidden_size
        self.rm_head = nn.Sequential(nn.Linear(hidden, 1024), nn.ReLU(), nn.Dropout(0.05),
                                     nn.Linear(1024, 16), nn.ReLU(), nn.Linear(16, 2))

    @torch.inference_mode()
    def reward(self, input_ids, attention_mask, pixel_values, image_grid_thw, reward_token_id: int) -> torch.Tensor:
        """[B, 2] float32: column 0 is mu, column 1 log sigma, read at each row's one reward token."""
        at_reward = input_ids == reward_token_id
        per_row = at_reward.sum(dim=1)
        if bool((per_row != 1).any()):
            raise ValueError(f"each row needs exactly one {REWARD_TOKEN} token; rows have {per_row.tolist()}")
        embeds = self.get_input_embeddings()(input_ids)
        at_image = input_ids == self.config.image_token_id
        if pixel_values is not None:
            features = torch.cat(list(self.model.get_image_features(pixel_values, image_grid_thw).pooler_output))
            if features.shape[0] != int(at_image.sum()):
                raise ValueError(f"{features.shape[0]} image features for {int(at_image.sum())} image positions")
            embeds = embeds.masked_scatter(at_image[..., None].expand_as(embeds), features.to(embeds.dtype))
        elif bool(at_image.any()):
            raise ValueError("image positions in the text but no pixel values")
        # position_ids=None: the text model counts positions 0..L-1 for every row and section
        hidden = self.model.language_model(inputs_embeds=embeds, attention_mask=attention_mask,
                                           position_ids=None, use_cache=False).last_hidden_state
        return self.rm_head(hidden[at_reward].float())


def to_model_key(key: str) -> str:
    for old, new in RELEASED_PREFIXES:
        if key.startswith(old):
            return new + key[len(old):]
    return key


def to_released_key(key: str) -> str:
    for old, new in RELEASED_PREFIXES:
        if key.startswith(new):
            return old + key[len(new):]
    return key


def _names(keys) -> str:
    keys = sorted(keys)
    more = f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else ""
    return ", ".join(keys[:SHOWN]) + more


def _layout_problem(file_keys, expected) -> str | None:
    """What is wrong with a checkpoint's key names, in the released (file) naming; None if nothing."""
    mapped = {to_model_key(k): k for k in file_keys}
    missing = [to_released_key(k) for k in expected if k not in mapped]
    unexpected = [mapped[k] for k in mapped if k not in expected]
    if not missing and not unexpected:
        return None
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing: {_names(missing)}")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected: {_names(unexpected)}")
    hint = ""
    if any(k.startswith(("model.language_model.", "model.visual.")) for k in file_keys):
        hint = (" The file uses the transformers 5.x names (model.language_model.*); the released "
                "HPSv3.safetensors uses the 4.45 names (model.*, visual.*).")
    return "; ".join(parts) + "." + hint


def released_paths(model: str, base: str | None) -> tuple[Path, str]:
    """(HPSv3.safetensors, the base folder or Hub id) of a checkpoint folder, or what to download."""
    path = Path(model)
    checkpoint = path if path.suffix == ".safetensors" else path / CHECKPOINT
    if not checkpoint.is_file():
        raise JudgeError(f"no {CHECKPOINT} at {model}: download it (hf download MizzenAI/HPSv3 "
                         f"{CHECKPOINT} --local-dir {path}), or give the URL of an HPSv3 service")
    if base is None:
        folder = checkpoint.parent
        found = [f for f in (folder / "base", folder) if (f / "config.json").is_file()]
        if not found:
            raise JudgeError(f"no Qwen2-VL config beside {checkpoint}: hf download Qwen/Qwen2-VL-7B-Instruct "
                             f'--exclude "*.safetensors" --local-dir {folder / "base"} (or pass base=)')
        base = str(found[0])
    return checkpoint, base


def load_config(checkpoint: Path, base: str):
    """The Qwen2-VL config of `base` with the vocabulary the checkpoint was resized to."""
    from safetensors import safe_open
    from transformers import Qwen2VLConfig

    with safe_open(str(checkpoint), framework="pt") as f:
        keys = list(f.keys())
        if "model.embed_tokens.weight" not in keys:
            raise JudgeError(f"{checkpoint} has no model.embed_tokens.weight, so it is not in the released "
                             f"HPSv3 layout. {_layout_problem(keys, {'model.language_model.embed_tokens.weight'})}")
        rows = f.get_slice("model.embed_tokens.weight").get_shape()[0]
    try:
        config = Qwen2VLConfig.from_pretrained(base)
    except (OSError, ValueError) as e:
        raise JudgeError(f"cannot read the Qwen2-VL config in {base}: {e}") from None
    config.text_config.vocab_size = rows
    return config, keys


def load_processor(base: str, vocab_rows: int):
    """Qwen2-VL's processor from `base` with the reward token added, padding on the right."""
    from transformers import AutoProcessor

    try:
        processor = AutoProcessor.from_pretrained(base)
    except (OSError, ValueError) as e:
        raise JudgeError(f"cannot read the Qwen2-VL processor in {base}: {e}") from None
    tokenizer = processor.tokenizer
    tokenizer.padding_side = "right"
    tokenizer.add_special_tokens({"additional_special_tokens": [REWARD_TOKEN]})
    reward_id = tokenizer.convert_tokens_to_ids(REWARD_TOKEN)
    if reward_id >= vocab_rows:
        raise JudgeError(f"{REWARD_TOKEN} is token {reward_id} for the tokenizer in {base}, but the checkpoint "
                         f"has {vocab_rows} embedding rows: base is not the tokenizer HPSv3 was trained with "
                         "(Qwen/Qwen2-VL-7B-Instruct)")
    return processor, reward_id


def load_released(checkpoint: str | Path, base: str, dtype: torch.dtype, device: str,
                  attn_implementation: str = "sdpa"):
    """(model, processor, reward token id) from the released checkpoint file and the base folder."""
    checkpoint = Path(checkpoint)
    config, file_keys = load_config(checkpoint, base)
    processor, reward_id = load_processor(base, config.text_config.vocab_size)
    with torch.device("meta"):
        expected = set(HPSv3RewardModel(config).state_dict())
    problem = _layout_problem(file_keys, expected)
    if problem:
        raise JudgeError(f"{checkpoint} does not match the HPSv3 model: {problem} Nothing was loaded.")
    with tempfile.TemporaryDirectory() as tmp:  # from_pretrained wants config.json + model.safetensors
        config.save_pretrained(tmp)
        os.symlink(checkpoint.resolve(), Path(tmp) / "model.safetensors")
        model, info = HPSv3RewardModel.from_pretrained(
            tmp, config=config, key_mapping=KEY_MAPPING, dtype=dtype, device_map=device,
            attn_implementation=attn_implementation, output_loading_info=True, use_kernels=False)
    report = {k: list(v) for k, v in info.items() if v}
    if report:
        raise JudgeError(f"loading {checkpoint} left weights unset or unused: {json.dumps(report)[:600]}")
    model.eval()  # after the head exists: its Dropout must be off
    model.config.pad_token_id = processor.tokenizer.pad_token_id
    return model, processor, reward_id


def released_config(text: dict, vision: dict, token_ids: dict[str, int]) -> dict:
    """A config.json in the flat layout Qwen2-VL-7B-Instruct publishes (and 4.45 reads)."""
    return {"architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl",
            "hidden_act": "silu", "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "use_cache": True,
            "use_sliding_window": False, "attention_dropout": 0.0, "torch_dtype": "bfloat16",
            **{k: v for k, v in text.items() if k != "mrope_section"},
            "rope_scaling": {"type": "mrope", "mrope_section": list(text["mrope_section"])},
            "vision_config": dict(vision), **token_ids}


def write_base_processor(base: Path, tokenizer, image_processor) -> None:
    """The processor files as Qwen2-VL-7B-Instruct publishes them (which 4.45 and 5.x both read):
    tokenizer.json + tokenizer_config.json, preprocessor_config.json, chat_template.json."""
    tokenizer.save_pretrained(base)
    tok_config = json.loads((base / "tokenizer_config.json").read_text())
    specials = tok_config.pop("extra_special_tokens", None) or list(tokenizer.additional_special_tokens or [])
    tok_config.update(tokenizer_class="PreTrainedTokenizerFast", additional_special_tokens=specials)
    (base / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2))
    pre = {k: v for k, v in image_processor.to_dict().items() if k in (
        "do_convert_rgb", "do_normalize", "do_rescale", "do_resize", "image_mean", "image_std", "merge_size",
        "patch_size", "resample", "rescale_factor", "temporal_patch_size")}
    pre.update(min_pixels=image_processor.size["shortest_edge"], max_pixels=image_processor.size["longest_edge"],
               image_processor_type="Qwen2VLImageProcessor", processor_class="Qwen2VLProcessor")
    (base / "preprocessor_config.json").write_text(json.dumps(pre, indent=2))
    (base / "chat_template.json").write_text(json.dumps({"chat_template": tokenizer.chat_template}, indent=2))
    (base / "chat_template.jinja").unlink(missing_ok=True)


def save_released(folder: str | Path, text: dict, vision: dict, tokenizer, image_processor,
                  vocab_rows: int | None = None, seed: int = 0, device: str = "cpu") -> Path:
    """A random HPSv3 in the released layout: FOLDER/HPSv3.safetensors (4.45 key names, backbone
    bf16, head float32, `vocab_rows` embedding rows: default the tokenizer grown by the reward
    token, as HPSv3's resize_token_embeddings left it) and FOLDER/base (the Qwen2-VL config in the
    flat layout, tokenizer and processor, without the reward token)."""
    from safetensors.torch import save_file
    from transformers import Qwen2VLConfig

    folder = Path(folder)
    base = folder / "base"
    base.mkdir(parents=True, exist_ok=True)
    ids = {name: tokenizer.convert_tokens_to_ids(tok) for name, tok in (
        ("bos_token_id", "<|endoftext|>"), ("eos_token_id", "<|im_end|>"), ("vision_start_token_id", "<|vision_start|>"),
        ("vision_end_token_id", "<|vision_end|>"), ("image_token_id", "<|image_pad|>"),
        ("video_token_id", "<|video_pad|>"))}
    (base / "config.json").write_text(json.dumps(released_config(text, vision, ids), indent=2))
    write_base_processor(base, tokenizer, image_processor)
    config = Qwen2VLConfig.from_pretrained(base)
    config.text_config.vocab_size = vocab_rows or len(tokenizer) + (REWARD_TOKEN not in tokenizer.get_vocab())
    torch.manual_seed(seed)
    with torch.device(device):
        model = HPSv3RewardModel._from_config(config, dtype=torch.bfloat16)
    model.rm_head.float()
    state = {to_released_key(k): v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    tmp = folder / f".{CHECKPOINT}.tmp"
    save_file(state, str(tmp), metadata={"format": "pt"})
    os.replace(tmp, folder / CHECKPOINT)  # the file's presence means the build finished
    return folder


def build_hpsv3(folder: str | Path, text: dict, vision: dict, vocab_rows: int | None = None,
                device: str = "cpu") -> Path:
    """A random HPSv3 (seed 0) with the chat-template tokenizer, in the released checkpoint layout.
    `text` needs vocab_size (default: the tokenizer's) and mrope_section; `vocab_rows` is the
    checkpoint's embedding rows (default: the tokenizer plus <|Reward|>)."""
    from transformers import Qwen2VLImageProcessor

    from salon.models.hpsv3_prompt import INSTRUCTION, TAIL
    from salon.models.tokenizer import chat_tokenizer

    folder = Path(folder)
    if (folder / CHECKPOINT).exists():
        return folder
    tok = chat_tokenizer((INSTRUCTION, TAIL), vocab_size=1200)  # the rubric costs about what it costs in Qwen
    # Qwen2-VL-7B-Instruct's published bounds (3136..12845056 pixels): HPSv3's 420 px images are not resized again
    image_processor = Qwen2VLImageProcessor(min_pixels=3136, max_pixels=12845056)
    return save_released(folder, {"vocab_size": len(tok), **text}, vision, tok, image_processor,
                         vocab_rows=vocab_rows, device=device)
