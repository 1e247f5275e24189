"""Refinement rounds: an image-capable critic looks at a rendered candidate (and its guide
photo) and writes advice; the painter revises its sketch. `salon curate generate --rounds R`
drives this; every revision is stored with its round number and its parent's id.

The critique never carries a score or mentions other paintings: the prompt forbids it and
`clean_critique` drops any sentence that does it anyway, since a painter shown "7/10" or "the
reference" learns to chase the grader rather than the subject.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from salon.curate.backends import Limited, Sampling
from salon.curate.extract import strip_thinking
from salon.curate.prompts import Subject, critic_messages, revise_messages

MAX_CRITIQUE_CHARS = 2000
CRITIC_SAMPLING = Sampling(temperature=0.3, top_p=0.95, max_tokens=400)
_FORBIDDEN = re.compile(
    r"\b\d+(\.\d+)?\s*(/|out of)\s*(5|10|100)\b|\b(score|scored|rating|rated|grade)\b"
    r"|\breference (painting|image|picture)s?\b|\bother paintings?\b", re.I)
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")


def clean_critique(text: str) -> str | None:
    """The advice part of a critic reply, or None when nothing usable is left."""
    text = strip_thinking(text)
    kept = [s for s in _SENTENCE.findall(text) if s.strip() and not _FORBIDDEN.search(s)]
    advice = "".join(kept).strip()[:MAX_CRITIQUE_CHARS]
    return advice or None


@dataclass
class Critique:
    advice: str | None        # None: the critic did not answer usefully
    error: str | None = None  # set when the call itself failed (infrastructure)


async def critique(critic: Limited, subject: Subject, painting_png: bytes,
                   photo: bytes | None) -> Critique:
    call = await critic.call(critic_messages(subject, painting_png, photo), CRITIC_SAMPLING)
    if not call.ok:
        return Critique(None, call.error)
    return Critique(clean_critique(call.completion.text))


def revision(subject: Subject, code: str, advice: str, photo: bytes | None):
    """The painter's messages for a revision and the prompt text stored with the candidate."""
    messages = revise_messages(subject, code, advice, photo)
    return messages, messages[-1].text
