"""HPSv3's score: mu (unbounded, about -10 for a blank canvas to +10 for the best text-to-image
models) mapped into (0, 1) as the prior art's service did, `1 / (1 + exp(-mu / 4))`.

    rating_from(mu, log_sigma)     # Rating(score, mu, log_sigma), or score None for a non-finite answer
"""

from __future__ import annotations

import math

from salon.judges.verdict import Rating

SCORE_SCALE = 4.0  # score = sigmoid(mu / 4): the prior art's service


def score_from_mu(mu: float) -> float:
    return 0.5 * (1.0 + math.tanh(mu / (2.0 * SCORE_SCALE)))  # = 1 / (1 + exp(-mu / 4)), without overflow


def rating_from(mu, log_sigma) -> Rating:
    """A Rating from HPSv3's two outputs; non-finite numbers (a bf16 overflow) are no answer."""
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (mu, log_sigma)):
        return Rating(None, reason=f"hpsv3 gave no finite answer (mu={mu!r}, log_sigma={log_sigma!r})")
    return Rating(score_from_mu(mu), mu=float(mu), log_sigma=float(log_sigma))


