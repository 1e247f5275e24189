"""What every section of the train config shares: its problems raised at once, named by the
section (salon.train.config collects them across sections), and YAML 1.1's bare on/off.

    raise_problems("render", ["render.gpu='x': use auto, on, off"])     # ConfigError, or nothing
    on_off(True)                                                       # "on"
"""

from __future__ import annotations

from salon.pool.errors import ConfigError


def on_off(value):
    """A setting of "on"/"off"/..., as YAML 1.1 reads a bare on/off: a boolean."""
    return ("on" if value else "off") if isinstance(value, bool) else value


def raise_problems(cls_name: str, problems: list[str]) -> None:
    if problems:
        raise ConfigError(problems, cls_name)
