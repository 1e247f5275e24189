"""`hf:MODEL`: a local transformers model, a text LLM or an image-text-to-text model.

MODEL is a model name as every salon command reads it (salon.models.names): a folder, a Hub id,
tiny:qwen3 (a tiny random model built once, offline) or random:NAME; a name that cannot be found
is refused in one line before anything loads. The config is read when the backend is made
(cheap, so `--guides` can be checked against `supports_images` before a run); weights load on
the first call. Generation runs in a worker thread, one at a time per model, bounded by
`max_time` so a timed-out call frees the model instead of running on in the background.

    python -m salon.curate.backends hf:Qwen/Qwen3-0.6B
    salon curate generate --subject koi --model hf:tiny:qwen3 -n 2     # offline: a tiny random painter
"""

from __future__ import annotations

import asyncio
import io
import threading

from salon.curate.backends import BackendConfig, BackendFatal, CallFailed, Completion, Sampling
from salon.curate.prompts import Message
from salon.pool.errors import SetupError


class HFBackend:
    def __init__(self, model: str, config: BackendConfig):
        try:
            from transformers import AutoConfig
        except ImportError as e:
            raise SetupError("the hf backend needs transformers and torch: "
                             "pip install 'salon[judge]'") from e
        from salon.models.names import model_problem, resolve_model

        if problem := model_problem("hf:", model):
            raise BackendFatal(problem)
        self.model_id = resolve_model(model)  # a tiny:/random: name is built once, into the machine's cache
        self.name = f"hf:{model}"
        self.config = config
        try:
            model_config = AutoConfig.from_pretrained(self.model_id)
        except (OSError, ValueError) as e:
            raise BackendFatal(f"cannot read the config of {model!r}: {e}. Pass a local folder "
                               f"or a model id that is in the Hugging Face cache.") from e
        self.supports_images = hasattr(model_config, "vision_config")
        self._lock = threading.Lock()
        self._model = self._processor = None

    async def complete(self, messages: list[Message], sampling: Sampling) -> Completion:
        if any(m.images for m in messages) and not self.supports_images:
            raise BackendFatal(f"{self.name} is a text model and cannot look at photos; "
                               f"drop --guides or use an image-text-to-text model")
        return await asyncio.to_thread(self._generate, messages, sampling)

    def _load(self) -> None:
        import torch
        from transformers import (AutoModelForCausalLM, AutoModelForImageTextToText,
                                  AutoProcessor, AutoTokenizer)

        device = self.config.device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        if self.supports_images:
            self._processor = AutoProcessor.from_pretrained(self.model_id)
            cls = AutoModelForImageTextToText
        else:
            self._processor = AutoTokenizer.from_pretrained(self.model_id)
            cls = AutoModelForCausalLM
        self._model = cls.from_pretrained(self.model_id, dtype=dtype, use_kernels=False).to(device).eval()

    def _generate(self, messages: list[Message], sampling: Sampling) -> Completion:
        import torch

        with self._lock:
            if self._model is None:
                try:
                    self._load()
                except (OSError, ValueError) as e:
                    raise BackendFatal(f"cannot load {self.model_id!r}: {e}") from e
            inputs = self._inputs(messages).to(self._model.device)
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            sample = sampling.temperature > 0
            tokenizer = getattr(self._processor, "tokenizer", self._processor)
            try:
                with torch.inference_mode():
                    out = self._model.generate(
                        **inputs, max_new_tokens=sampling.max_tokens, do_sample=sample,
                        temperature=sampling.temperature if sample else None,
                        top_p=sampling.top_p if sample else None,
                        max_time=self.config.timeout_s, pad_token_id=tokenizer.pad_token_id)
            except (RuntimeError, ValueError) as e:
                raise CallFailed(f"generate failed: {type(e).__name__}: {e}") from e
        new = out[0, inputs["input_ids"].shape[1]:]
        text = tokenizer.decode(new, skip_special_tokens=True)
        finish = "length" if len(new) >= sampling.max_tokens else "stop"
        return Completion(text, finish)

    def _inputs(self, messages: list[Message]):
        if not self.supports_images:
            chat = [{"role": m.role, "content": m.text} for m in messages]
            return self._processor.apply_chat_template(
                chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        from PIL import Image

        chat, images = [], []
        for m in messages:
            parts = [{"type": "image"} for _ in m.images] + [{"type": "text", "text": m.text}]
            chat.append({"role": m.role, "content": parts})
            images += [Image.open(io.BytesIO(b)).convert("RGB") for b in m.images]
        text = self._processor.apply_chat_template(chat, add_generation_prompt=True,
                                                   tokenize=False)
        return self._processor(text=[text], images=images or None, return_tensors="pt")

    async def aclose(self) -> None:
        self._model = self._processor = None
