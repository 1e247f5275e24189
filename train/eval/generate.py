"""The run's policy, one checkpoint at a time, writing replies to held-out prompts for `salon eval`.

    policy = CheckpointPolicy(train_cfg, run_dir)
    texts = policy.generate(run_dir / "checkpoint-20", [messages, ...], samples=4, seed=7)
    texts = policy.generate(None, ...)           # the base policy (step 0)
    policy.close()

The base model loads once; a LoRA checkpoint (adapter_model.safetensors) goes on top of it and
comes off again after (`unload`, the base weights untouched), a full checkpoint loads on its own.
Sampling is the run's (temperature, top_p, top_k, max_completion_length), so a checkpoint paints
as it did in training. Generation is plain `generate` with every prompt x sample in one batch
(left-padded), seeded per checkpoint by the eval's seed: two calls with the same checkpoint,
prompts and seed write the same replies.
"""

from __future__ import annotations

from pathlib import Path


class CheckpointPolicy:
    def __init__(self, train_cfg, run_dir: Path):
        import torch
        from transformers import AutoTokenizer

        from salon.models.names import resolve_model

        self.cfg = train_cfg
        self.base_path = resolve_model(train_cfg.policy.model, run_dir)  # where the run built its tiny: policy
        self.device = "cuda" if torch.cuda.is_available() and not train_cfg.grpo.use_cpu else "cpu"
        dtype = train_cfg.policy.dtype
        self.dtype = getattr(torch, dtype) if dtype != "auto" else (
            torch.bfloat16 if self.device == "cuda" else torch.float32)
        self.tokenizer = AutoTokenizer.from_pretrained(self.base_path)
        self._base = None

    def _load(self, path: str | Path):
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_pretrained(
            str(path), dtype=self.dtype, attn_implementation=self.cfg.policy.attn_implementation,
            use_kernels=False).to(self.device)

    def _model(self, checkpoint: Path | None):
        """The model of `checkpoint` and a function that undoes its loading."""
        if checkpoint is not None and not (checkpoint / "adapter_config.json").is_file():
            model = self._load(checkpoint)  # a full-weights checkpoint (lora.enabled: false)
            return model, lambda: None
        if self._base is None:
            self._base = self._load(self.base_path)
        if checkpoint is None:
            return self._base, lambda: None
        from peft import PeftModel

        model = PeftModel.from_pretrained(self._base, str(checkpoint))

        def unload():
            self._base = model.unload()  # the LoRA layers come off; the base weights were never changed

        return model, unload

    def generate(self, checkpoint: Path | None, chats: list[list[dict]], samples: int, seed: int) -> list[str]:
        """`samples` replies per chat, chat-major (chat 0's samples first)."""
        import torch

        g = self.cfg.grpo
        texts = [self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False,
                                                    enable_thinking=self.cfg.policy.enable_thinking)
                 for chat in chats]
        inputs = self.tokenizer(texts, return_tensors="pt", padding=True, padding_side="left",
                                add_special_tokens=False).to(self.device)
        model, unload = self._model(checkpoint)
        try:
            model.eval()
            torch.manual_seed(seed)
            with torch.inference_mode():
                out = model.generate(**inputs, do_sample=True, temperature=g.temperature, top_p=g.top_p,
                                     top_k=g.top_k or None, max_new_tokens=g.max_completion_length,
                                     num_return_sequences=samples, pad_token_id=self.tokenizer.pad_token_id)
        finally:
            unload()
        new = out[:, inputs["input_ids"].shape[1]:]
        return self.tokenizer.batch_decode(new, skip_special_tokens=True)

    def close(self) -> None:
        self._base = None
