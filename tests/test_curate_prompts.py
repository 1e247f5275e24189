"""Prompts, subjects and critique cleaning (salon.curate.prompts, salon.curate.refine)."""

from __future__ import annotations

import re

import pytest

from salon.curate.sandbox import gate
from salon.curate.prompts import (ALLOWED_BRUSH_METHODS, PROMPT_VERSION, SYSTEM_PROMPT, Subject,
                                  SubjectBook, paint_messages, revise_messages)
from salon.curate.refine import clean_critique
from salon.pool.errors import ConfigError


def test_allowlist_is_ten_real_brush_methods_and_the_prompt_names_only_those():
    assert len(ALLOWED_BRUSH_METHODS) == 10 and set(ALLOWED_BRUSH_METHODS) <= gate.BRUSH_API
    named = set(re.findall(r"brush\.(\w+)\(", SYSTEM_PROMPT))
    assert named == set(ALLOWED_BRUSH_METHODS)


def test_skeleton_with_one_shape_passes_the_static_gate():
    sketch = SYSTEM_PROMPT.split("```javascript\n")[1].split("```")[0].replace(
        "  noLoop();", '  brush.fill("#e8734a", 150);\n  brush.circle(0, 0, 200);\n  noLoop();')
    assert gate.static_violations(sketch) == []


def test_prompt_version_follows_the_text():
    assert re.fullmatch(r"v1\+[0-9a-f]{8}", PROMPT_VERSION)


def test_bundled_subjects_and_ad_hoc_ones():
    book = SubjectBook.load()
    hibiscus = book.get("peach hibiscus")
    assert hibiscus.taxon == "Hibiscus rosa-sinensis" and hibiscus.slug == "peach-hibiscus"
    assert book.get("red kite").prompt == "a red kite in watercolour"
    assert len(book.subjects) >= 8


def test_subject_file_problems(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("- name: x\n  prompt: ''\n")
    with pytest.raises(ConfigError, match="prompt is empty"):
        SubjectBook.load(bad)
    bad.write_text("name: not a list\n")
    with pytest.raises(ConfigError, match="list of mappings"):
        SubjectBook.load(bad)


def test_messages_carry_photos_and_the_previous_sketch():
    s = Subject("koi", "two koi")
    plain = paint_messages(s)
    assert [m.role for m in plain] == ["system", "user"] and plain[1].images == ()
    guided = paint_messages(s, b"\xff\xd8jpeg")
    assert guided[1].images == (b"\xff\xd8jpeg",) and "photo" in guided[1].text
    revised = revise_messages(s, "function setup() {}\n", "More orange.")
    assert [m.role for m in revised] == ["system", "user", "assistant", "user"]
    assert "More orange." in revised[-1].text


def test_critique_drops_scores_and_references():
    text = ("<think>it is a 6/10</think>Make the petals larger. I would rate this 7 out of 10. "
            "Unlike the reference painting, the centre is weak. Add a darker wash at the centre!")
    advice = clean_critique(text)
    assert advice == "Make the petals larger. Add a darker wash at the centre!"
    assert clean_critique("Score: 8/10.") is None and clean_critique("") is None
