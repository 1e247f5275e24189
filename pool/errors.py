"""Every error salon raises on purpose, in one place.

Messages say what went wrong and what to do about it. Library code raises these; only the
`salon` command line and the Gradio app translate them for people (exit code 2, no traceback).
"""


class SalonError(Exception):
    """Base class: a problem the user can fix; the message says how."""


class ConfigError(SalonError):
    """A config (dataclass, YAML, CLI flags) is invalid. Lists every problem at once."""

    def __init__(self, problems: list[str], where: str = "config"):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{where} has {len(self.problems)} problem(s):\n{lines}")


class SetupError(SalonError):
    """Something the environment must provide is missing (Chromium, npm assets, an extra)."""


class PoolError(SalonError):
    """The pool store is missing, locked, corrupt or was given bad input."""


class HubError(SalonError):
    """Publishing to or pulling from the Hugging Face Hub failed."""


class BackendError(SalonError):
    """A model backend failed to answer (infrastructure, never a candidate)."""


class JudgeError(SalonError):
    """A judge could not be built or loaded."""


class RunError(SalonError):
    """A training run's folder is not one run: none trained there, another already did, or its
    rollout archive holds two runs."""


class CardMemoryError(SalonError):
    """A step needed more accelerator memory than the card has; the message names the settings that lower it."""
