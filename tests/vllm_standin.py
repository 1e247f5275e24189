"""A loopback stand-in for the one endpoint of vLLM's HTTP server that TRL's async rollout worker
calls, answered by a real (tiny) transformers model: vLLM itself cannot run on these machines.

    server = VLLMStandIn(model_folder).start()     # 127.0.0.1, a free port; server.url
    server.requests                                # every payload received, for assertions
    server.close()

    POST /v1/completions {"prompt": [token ids], "max_tokens", "temperature", "top_p", "top_k",
                          "seed", "n": 1, "return_token_ids": true, "logprobs": 0, ...}
      -> {"choices": [{"text", "token_ids": [...], "logprobs": {"token_logprobs": [...]},
                       "finish_reason": "stop" | "length"}]}

Sampling is the model's own `generate` seeded with the request's seed; each sampled token's
log-probability is taken under the processed distribution (temperature, top-k, top-p), as vLLM's
`logprobs` mode "processed_logprobs" gives it. One request generates at a time.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

from salon.judges.pairwise_remote import BackgroundServer, send_json


class VLLMStandIn(BackgroundServer):
    def __init__(self, model_folder, host: str = "127.0.0.1", port: int = 0):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = AutoModelForCausalLM.from_pretrained(model_folder).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(model_folder)
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        super().__init__((host, port), _Handler)

    def complete(self, payload: dict) -> dict:
        import torch

        prompt = torch.tensor([payload["prompt"]])
        with self.lock, torch.no_grad():
            torch.manual_seed(int(payload.get("seed", 0)) % 2**32)
            out = self.model.generate(
                prompt, attention_mask=torch.ones_like(prompt), do_sample=True, max_new_tokens=payload["max_tokens"],
                temperature=payload.get("temperature", 1.0), top_p=payload.get("top_p", 1.0),
                top_k=payload.get("top_k", 0), return_dict_in_generate=True, output_scores=True,
                pad_token_id=self.tokenizer.pad_token_id)
        ids = out.sequences[0, prompt.shape[1]:]
        logprobs = [torch.log_softmax(step[0].float(), -1)[token].item() for step, token in zip(out.scores, ids)]
        ids = ids.tolist()
        stopped = bool(ids) and ids[-1] == self.tokenizer.eos_token_id
        return {"choices": [{"index": 0, "text": self.tokenizer.decode(ids), "token_ids": ids,
                             "logprobs": {"token_logprobs": logprobs},
                             "finish_reason": "stop" if stopped else "length"}]}


class _Handler(BaseHTTPRequestHandler):
    server: VLLMStandIn

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        if self.path != "/v1/completions":
            return send_json(self, 404, {"error": f"the stand-in serves POST /v1/completions only, not {self.path}"})
        payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.requests.append(payload)
        send_json(self, 200, self.server.complete(payload))
