"""The pairwise judging prompt, shared by every pairwise backend, with its version.

The prompt is part of the reward function: a changed wording is a new `version`, recorded in every
verdict. The answer is one letter so that a backend can read P("A") vs P("B") from one position's
logits (or top logprobs) instead of parsing free text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PairwisePrompt:
    version: str
    intro: str
    between: str
    question: str
    answers: tuple[str, str] = ("A", "B")
    system: str | None = None
    _strict: re.Pattern = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self):
        letters = "".join(re.escape(a) for a in self.answers)
        object.__setattr__(self, "_strict", re.compile(rf"^\s*([{letters}])\s*\.?\s*$"))

    def messages(self, first=None, second=None) -> list[dict]:
        """Chat messages with two image slots; `first`/`second` may be images or left out."""
        def image(x):
            return {"type": "image"} if x is None else {"type": "image", "image": x}

        content = [
            {"type": "text", "text": self.intro},
            image(first),
            {"type": "text", "text": self.between},
            image(second),
            {"type": "text", "text": self.question},
        ]
        msgs = [{"role": "user", "content": content}]
        if self.system:
            msgs.insert(0, {"role": "system", "content": [{"type": "text", "text": self.system}]})
        return msgs

    def parse(self, text: str) -> int | None:
        """0 for the first answer, 1 for the second, None for anything else (strict)."""
        m = self._strict.match(text or "")
        return None if m is None else self.answers.index(m.group(1))


PAIRWISE_PROMPT = PairwisePrompt(
    version="pairwise-v1",
    intro="Painting A:",
    between="Painting B:",
    question=(
        "Both are watercolour paintings of the same subject. Which is the better watercolour "
        "painting, judged on composition, colour, brushwork and how fully the canvas is painted? "
        "Answer with one letter, A or B."
    ),
)
