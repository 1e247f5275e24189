"""salon.pool: the store of every candidate and label, and its published form on the Hub.

    from salon.pool import Pool, Candidate, GuidePhoto
    with Pool.open("salon-pool") as pool:
        pool.add_candidate(Candidate(code=js, seed=0, subject="peach hibiscus", png=png, ok=True))

See salon.pool.store for the store API, salon.pool.export / hub for publishing. Names are
loaded on first use, so importing salon.pool.errors (every command does) stays cheap.
"""

from importlib import import_module

_EXPORTS = {
    "TIERS": "models", "Candidate": "models", "GuidePhoto": "models", "Label": "models",
    "PairChoice": "models", "Release": "models", "candidate_id": "models",
    "Pool": "store", "default_pool_dir": "store",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'salon.pool' has no attribute {name!r}")
    return getattr(import_module(f"salon.pool.{_EXPORTS[name]}"), name)
