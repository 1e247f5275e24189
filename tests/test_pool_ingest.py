"""`salon pool import` inputs: .js (+ PNG beside it), replies, folders, JSONL rows; rendering
behind one function (a stand-in renderer here; the real sandbox in test_pool_cli)."""

from __future__ import annotations

import json

import pytest

from salon.curate.ingest import Defaults, import_paths

SKETCH = "function setup() {\n  createCanvas(600, 600, WEBGL);\n  brush.fill('red');\n}\n"


class StandInRenderer:
    """Renders by table: code -> (ok, violations, png) or "unavailable"."""

    def __init__(self, make_png, unavailable=False):
        self.make_png, self.unavailable, self.calls = make_png, unavailable, []

    def __call__(self, candidates, progress):
        self.calls.append([c.id for c in candidates])
        if self.unavailable:
            return "render sandbox unavailable (test)"
        for i, c in enumerate(candidates):
            c.ok, c.violations, c.png, c.render_ms = True, [], self.make_png(len(c.code) + i), 5
        return None


def test_js_reply_folder_and_defaults(pool, tmp_path, make_png):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.js").write_text(SKETCH)
    (tmp_path / "in" / "b.js").write_text(SKETCH.replace("red", "blue"))
    (tmp_path / "in" / "b.png").write_bytes(make_png(2))  # its render travels with it
    (tmp_path / "in" / "reply.txt").write_text(f"Here you go:\n```js\n{SKETCH.replace('red', 'teal')}```\n")
    (tmp_path / "in" / "noreply.md").write_text("I cannot paint that, sorry.")
    (tmp_path / "in" / "notes.csv").write_text("ignored")
    render = StandInRenderer(make_png)
    out = import_paths(pool, [tmp_path / "in"], Defaults(subject="koi", model="m:x", seed=4), render=render)
    assert [o.file.rsplit("/", 1)[1] for o in out] == ["a.js", "b.js", "noreply.md", "reply.txt"]
    assert all(o.error is None and o.new for o in out)
    assert len(render.calls) == 1 and len(render.calls[0]) == 2  # a.js and reply.txt only
    by_file = {o.file.rsplit("/", 1)[1]: pool.get(o.id) for o in out}
    assert by_file["b.js"].image_sha256 and by_file["b.js"].ok
    assert by_file["reply.txt"].reply.startswith("Here you go") and "teal" in by_file["reply.txt"].code
    assert by_file["noreply.md"].ok is False and by_file["noreply.md"].violations == ["no_sketch"]
    assert by_file["noreply.md"].code == "" and by_file["noreply.md"].reply.startswith("I cannot")
    assert {(c.subject, c.model, c.seed) for c in by_file.values()} == {("koi", "m:x", 4)}
    again = import_paths(pool, [tmp_path / "in"], Defaults(seed=4), render=StandInRenderer(make_png))
    assert [o.id for o in again] == [o.id for o in out] and not any(o.new for o in again)
    assert len(pool.candidates()) == 4


def test_unavailable_render_stored_without_image_then_rendered(pool, tmp_path, make_png):
    (tmp_path / "a.js").write_text(SKETCH)
    out = import_paths(pool, [tmp_path / "a.js"], render=StandInRenderer(make_png, unavailable=True))
    assert out[0].new and out[0].ok is None and "unavailable" in out[0].warning
    assert pool.image_path(out[0].id) is None
    render = StandInRenderer(make_png)
    again = import_paths(pool, [tmp_path / "a.js"], render=render)
    assert render.calls == [[out[0].id]] and again[0].new and again[0].ok is True
    assert pool.image_path(out[0].id).exists()
    third = StandInRenderer(make_png)
    import_paths(pool, [tmp_path / "a.js"], render=third)
    assert third.calls == []  # rendered once is enough


def test_jsonl_rows_good_and_bad(pool, tmp_path, make_png):
    (tmp_path / "img.png").write_bytes(make_png(5))
    rows = [
        {"code": SKETCH, "seed": 1, "subject": "fern", "model": "hf:q", "prompt": "paint a fern",
         "prompt_version": "v3", "sampling": {"temperature": 0.7}, "round": 1, "parent_id": "ab" * 32,
         "guide_photo": {"id": 77, "license": "CC-BY", "attribution": "(c) x"},
         "image": "img.png", "ok": True, "paint_fraction": 0.3, "render_ms": 900, "extra": "ignored"},
        {"reply": "```js\n" + SKETCH + "```", "seed": 2},
        {"code": SKETCH, "seed": 3, "ok": False, "violations": ["external_access"]},
        {"seed": 4},
        {"code": 5, "seed": "x", "sampling": [1], "violations": "timeout", "ok": "yes"},
        [1, 2],
        {"code": SKETCH, "image": "missing.png"},
        {"code": SKETCH, "guide_photo": {"license": "CC0"}},
    ]
    lines = [json.dumps(r) for r in rows] + ["{not json"]
    (tmp_path / "rows.jsonl").write_text("\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n")
    render = StandInRenderer(make_png)
    out = import_paths(pool, [tmp_path / "rows.jsonl"], render=render)
    assert [o.file.rsplit(":", 1)[1] for o in out] == ["1", "2", "3", "5", "6", "7", "8", "9", "10"]
    good, errors = out[:3], out[3:]
    assert all(o.error is None for o in good) and len(render.calls[0]) == 1  # only the reply row
    first = pool.get(good[0].id)
    assert (first.subject, first.round, first.guide.id, first.guide.license, first.paint_fraction) == \
        ("fern", 1, "77", "CC-BY", 0.3)
    assert good[2].ok is False and good[2].violations == ["external_access"]
    assert "needs 'code'" in errors[0].error and "line 5" in errors[0].error
    for text in ("'code' must be a string", "'seed' must be an integer", "'sampling' must be an object",
                 "'violations' must be a list of strings", "'ok' must be true or false"):
        assert text in errors[1].error
    assert "must be a JSON object" in errors[2].error
    assert "cannot read image" in errors[3].error and "fix the 'image' path" in errors[3].error
    assert "'guide_photo' must be an object with an 'id'" in errors[4].error
    assert "is not JSON" in errors[5].error and "fix or remove that line" in errors[5].error
    assert len(pool.candidates()) == 3  # the bad rows cost nothing else


def test_missing_path_reported(pool, tmp_path):
    out = import_paths(pool, [tmp_path / "nope.js"], render=pytest.fail)
    assert "does not exist" in out[0].error
