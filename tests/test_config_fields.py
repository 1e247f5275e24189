"""Config fields check themselves from their annotations (salon.pool.field_checks): a number PyYAML
reads as a string is still a number, and a value that is not one is named by its key."""

from __future__ import annotations

import pytest

from salon.pool.errors import ConfigError
from salon.train.config import config_from_dict, load_config


def test_a_float_written_without_a_dot_is_a_number(tmp_path):
    # YAML 1.1 needs a dot in a float: PyYAML reads `2e-4` as the string "2e-4"
    path = tmp_path / "c.yaml"
    path.write_text("grpo:\n  learning_rate: 2e-4\n")
    assert load_config(path).grpo.learning_rate == pytest.approx(2e-4)
    assert config_from_dict({}, ["grpo.learning_rate=3e-5"]).grpo.learning_rate == pytest.approx(3e-5)


def test_a_value_that_is_not_a_number_is_named_with_the_rest():
    with pytest.raises(ConfigError) as e:
        config_from_dict({"grpo": {"beta": -1}}, ["grpo.learning_rate=fast", "lora.r=many"])
    text = str(e.value)
    assert "grpo.learning_rate='fast': must be a number" in text
    assert "lora.r='many': must be a whole number" in text and "grpo.beta=-1" in text


def test_the_render_section_is_a_render_config():
    from salon.curate.sandbox.render import RenderConfig

    cfg = config_from_dict({"render": {"workers": 2, "gpu": False, "size": 256}})  # YAML's bare off
    assert isinstance(cfg.render.sandbox, RenderConfig) and cfg.render.gpu == "off"
    assert (cfg.render.sandbox.size, cfg.render.workers) == (256, 2)
    assert config_from_dict({"render": cfg.to_dict()["render"]}).render == cfg.render  # saved flat, read back
    with pytest.raises(ConfigError, match=r"render\.size=10: must be between 64 and 4096"):
        config_from_dict({"render": {"size": 10}})


def test_an_empty_value_is_the_empty_choice_where_there_is_one():
    # `--set render.gl=` (a shell took the quotes off '') and `gl:` in YAML are both null
    cfg = config_from_dict({"render": {"gl": "vulkan-icd"}}, ["render.gl="])
    assert cfg.render.sandbox.gl == ""
    assert config_from_dict({"render": {"gl": None}}).render.sandbox.gl == ""  # what YAML reads from `gl:`
    with pytest.raises(ConfigError, match=r"render\.gpu=None: use one of"):
        config_from_dict({}, ["render.gpu="])  # no empty choice there: still named
