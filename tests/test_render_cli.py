"""`salon render` as a user runs it: .js files, raw model replies, bad bytes, --json lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from render_support import example

pytestmark = pytest.mark.browser

REPLY = """<think>The user wants a jellyfish. Maybe `function setup() { text('x') }`? No.</think>
Here is a watercolour jellyfish for you:

```javascript
{code}
```

The bell uses a soft wash and the tentacles are splines.
"""


def salon(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "salon.apps.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_render_json_lines_for_files_replies_and_garbage(tmp_path):
    (tmp_path / "bell.js").write_text(example("jellyfish_01_bell"))
    (tmp_path / "reply.txt").write_text(REPLY.replace("{code}", example("jellyfish_01_bell")))
    (tmp_path / "prose.txt").write_text("I cannot draw that, but here is a poem about jellyfish.")
    (tmp_path / "bytes.js").write_bytes(b"\xff\xfe\x00function setup() {\x80 createCanvas(600, 600, WEBGL); \xc3\x28 }")
    out = tmp_path / "renders"
    proc = salon("render", "bell.js", "reply.txt", "prose.txt", "bytes.js", "--json", "--seed", "3",
                 "--out-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["file"] for r in rows] == ["bell.js", "reply.txt", "prose.txt", "bytes.js"]
    for r in rows:
        assert set(r) == {"file", "ok", "violations", "paint_fraction", "render_ms", "js_errors", "image",
                          "render_unavailable", "gl", "isolation", "ocr_ms"}
        assert r["gl"] in ("", "swiftshader")  # "" when the gate stopped it before any browser
        assert r["isolation"] in ("netns", "browser-flags")  # named even when the gate stopped it
        assert r["render_unavailable"] is False
        assert r["ok"] == (r["violations"] == [] and r["image"] is not None)
    bell, reply, prose, garbage = rows
    assert bell["ok"] and Path(bell["image"]).read_bytes().startswith(b"\x89PNG")
    # The reply's fenced code was rendered (not the text() in its thinking): the same painting.
    assert reply["ok"] and reply["paint_fraction"] == pytest.approx(bell["paint_fraction"], abs=0.001)
    assert prose == {**prose, "ok": False, "violations": ["no_sketch"], "image": None}
    assert not garbage["ok"] and garbage["violations"]


def test_render_human_output_and_missing_file(tmp_path):
    (tmp_path / "blank.js").write_text(example("hibiscus_04_blank"))
    proc = salon("render", "blank.js", "--out-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert proc.returncode == 0 and "blank_canvas" in proc.stdout
    missing = salon("render", "nope.js", cwd=tmp_path)
    assert missing.returncode == 2 and "no such file: nope.js" in missing.stderr


def test_no_browser_means_render_unavailable_not_a_violation(tmp_path):
    import os

    (tmp_path / "bell.js").write_text(example("jellyfish_01_bell"))
    env = dict(os.environ, SALON_CHROMIUM="/bin/false")
    proc = subprocess.run([sys.executable, "-m", "salon.apps.cli", "render", "bell.js", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 1
    (row,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert row["render_unavailable"] is True and row["ok"] is False and row["violations"] == []
    assert "could not start Chromium" in proc.stderr
