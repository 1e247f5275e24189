"""The `salon pool` command line (a public interface): import, label / undo, stats, export,
check, dups; exit codes and messages; one import through the real render sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from salon.apps.cli import main
from salon.pool import Pool

SKETCH = "function setup() {\n  createCanvas(600, 600, WEBGL);\n}\n"


def run(capsys, *args) -> tuple[int, str, str]:
    code = main(["pool", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_import_label_undo_stats_export(capsys, tmp_path, make_png, monkeypatch):
    monkeypatch.setenv("SALON_POOL", str(tmp_path / "envpool"))
    (tmp_path / "a.js").write_text(SKETCH)
    (tmp_path / "a.png").write_bytes(make_png(1))
    (tmp_path / "rows.jsonl").write_text(
        json.dumps({"code": SKETCH + "//2\n", "image": "a.png", "model": "hf:x"}) + "\n"
        + json.dumps({"code": SKETCH + "//3\n", "ok": False, "violations": ["timeout"]}) + "\n"
        + '{"seed": 1}\n')
    code, out, err = run(capsys, "import", tmp_path / "a.js", tmp_path / "rows.jsonl", "--subject", "koi",
                         "--model", "m:a", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1  # one bad row
    assert [set(r) >= {"file", "id", "ok", "violations"} for r in rows] == [True] * 4
    assert [r["ok"] for r in rows[:3]] == [True, True, False] and rows[2]["violations"] == ["timeout"]
    assert rows[3]["id"] is None and "needs 'code'" in rows[3]["error"]
    assert (tmp_path / "envpool" / "pool.db").exists()  # $SALON_POOL is the default

    a, b = rows[0]["id"], rows[1]["id"]
    assert run(capsys, "label", a[:8], "love", "--by", "ana")[0] == 0
    assert run(capsys, "label", b, "okay", "--by", "ana")[0] == 0
    code, out, _ = run(capsys, "label", b, "nope", "--by", "ben", "--json")
    assert code == 0 and json.loads(out)["consensus"] == "nope"
    code, out, _ = run(capsys, "label", b, "--undo", "--by", "ben", "--json")
    assert json.loads(out)["tier"] is None and json.loads(out)["consensus"] == "okay"

    code, out, _ = run(capsys, "stats", "--json")
    stats = json.loads(out)
    assert set(stats) >= {"candidates", "tiers", "by_model", "by_subject", "violations", "labelers",
                          "agreement", "near_duplicates"}
    assert stats["tiers"] == {"love": 1, "okay": 1, "nope": 0, "unlabelled": 1}
    assert stats["by_model"]["m:a"]["candidates"] == 2 and stats["by_model"]["hf:x"]["ok"] == 1
    assert stats["by_subject"] == {"koi": {"candidates": 3, "ok": 2, "rejected": 1, "unrendered": 0}}
    code, out, _ = run(capsys, "stats")
    assert code == 0 and "3 candidates: 1 love, 1 okay, 0 nope, 1 unlabelled" in out

    code, out, _ = run(capsys, "export", "--to", tmp_path / "export", "--json")
    assert code == 0 and json.loads(out)["labelled"] == 2
    assert run(capsys, "export", "--to", tmp_path / "export")[0] == 2  # not empty, no --force
    assert run(capsys, "export", "--to", tmp_path / "export", "--force")[0] == 0
    code, out, _ = run(capsys, "check", "--json")
    assert json.loads(out) == {"bad_images": [], "fixed": False}
    code, out, _ = run(capsys, "dups", "--json")
    assert json.loads(out)["near_duplicates"] == [{"id": b, "dup_of": a}]  # the row reused a.png


def test_label_errors_exit_2_with_a_message(capsys, tmp_path, make_png):
    pool_dir = tmp_path / "pool"
    (tmp_path / "a.js").write_text(SKETCH)
    (tmp_path / "a.png").write_bytes(make_png(1))
    code, out, _ = run(capsys, "import", tmp_path / "a.js", "--pool", pool_dir, "--json")
    cid = json.loads(out)["id"]
    code, _, err = run(capsys, "label", cid, "fantastic", "--by", "ana", "--pool", pool_dir)
    assert code == 2 and "unknown tier 'fantastic': use one of love, okay, nope" in err
    code, _, err = run(capsys, "label", cid, "love", "--undo", "--by", "ana", "--pool", pool_dir)
    assert code == 2 and "either a TIER" in err
    code, _, err = run(capsys, "label", "abcdef12", "love", "--by", "ana", "--pool", pool_dir)
    assert code == 2 and "import the sketch first" in err
    with Pool.open(pool_dir, create=True) as pool:
        assert pool.label_history(cid) == []


def test_every_command_takes_pool(capsys):
    from salon.apps.cli import build_parser

    parser = build_parser()
    for verb in ("import x", "label x love --by a", "stats", "export --to d", "push a/b",
                 "pull a/b --to d", "check", "dups"):
        args = parser.parse_args(["pool", *verb.split(), "--pool", "P"])
        assert args.pool == "P"


@pytest.mark.browser
def test_import_renders_with_the_real_sandbox(capsys, tmp_path):
    examples = Path(__file__).parents[1] / "curate" / "examples"
    if not shutil.which("chromium") or not (Path(__file__).parents[1] / "node_modules" / "p5").exists():
        pytest.skip("needs Debian chromium and the npm assets")
    sketch = tmp_path / "k.js"
    shutil.copy(examples / "koi_01_pond.js", sketch)
    code, out, err = run(capsys, "import", sketch, "--pool", tmp_path / "pool", "--json")
    row = json.loads(out)
    assert code == 0 and row["ok"] is not None, err  # a verdict, not "unavailable"
    with Pool.open(tmp_path / "pool", create=True) as pool:
        stored = pool.get(row["id"])
        assert stored.render_ms and stored.violations == row["violations"]
        assert pool.image_path(row["id"]).read_bytes().startswith(b"\x89PNG")
    code, out, _ = run(capsys, "import", sketch, "--pool", tmp_path / "pool", "--json")
    assert json.loads(out)["new"] is False


def test_imported_examples_take_their_subject_from_their_leading_comment(capsys, tmp_path, make_png):
    """The README's import of the bundled examples names every subject (each example begins
    `// peach hibiscus — ...`); a PNG beside each copy stands for its render, so nothing renders here."""
    examples = Path(__file__).parents[1] / "curate" / "examples"
    folder = tmp_path / "examples"
    folder.mkdir()
    for i, sketch in enumerate(sorted(examples.glob("*.js"))):
        shutil.copy(sketch, folder / sketch.name)
        (folder / sketch.name).with_suffix(".png").write_bytes(make_png(i))
    code, _, _ = run(capsys, "import", folder, "--model", "salon:examples", "--pool", tmp_path / "pool")
    assert code == 0
    code, out, _ = run(capsys, "stats", "--pool", tmp_path / "pool")
    assert code == 0 and "subject unknown" not in out
    code, out, _ = run(capsys, "stats", "--pool", tmp_path / "pool", "--json")
    assert {k: v["candidates"] for k, v in json.loads(out)["by_subject"].items()} == {
        "peach hibiscus": 4, "jellyfish": 3, "koi pond": 2, "mountain lake": 2, "mountain lake at dusk": 1,
        "still life with pears": 1, "teacup": 1}

    # --subject, and a JSONL row's own subject, win over the comment; a comment with no dash names nothing
    (tmp_path / "rows.jsonl").write_text(
        json.dumps({"code": "// koi — two fish\n" + SKETCH, "subject": "carp", "ok": False}) + "\n"
        + json.dumps({"code": "// koi — three fish\n" + SKETCH, "ok": False}) + "\n"
        + json.dumps({"code": "// draws a koi\n" + SKETCH, "ok": False}) + "\n")  # ok false: nothing renders
    (tmp_path / "k.js").write_text("// koi — four fish\n" + SKETCH)
    (tmp_path / "k.png").write_bytes(make_png(99))
    code, out, _ = run(capsys, "import", tmp_path / "rows.jsonl", "--pool", tmp_path / "p2", "--json")
    code, more, _ = run(capsys, "import", tmp_path / "k.js", "--subject", "goldfish", "--pool", tmp_path / "p2",
                        "--json")
    ids = [json.loads(line)["id"] for line in (out + more).splitlines()]
    with Pool.open(tmp_path / "p2") as pool:
        assert [pool.get(i).subject for i in ids] == ["carp", "koi", None, "goldfish"]


def test_undo_of_a_label_never_given_says_so(capsys, tmp_path, make_png):
    (tmp_path / "a.js").write_text(SKETCH)
    (tmp_path / "a.png").write_bytes(make_png(1))
    pool_dir = tmp_path / "pool"
    code, out, _ = run(capsys, "import", tmp_path / "a.js", "--pool", pool_dir, "--json")
    cid = json.loads(out)["id"]
    assert run(capsys, "label", cid, "love", "--by", "ben", "--pool", pool_dir)[0] == 0
    code, out, _ = run(capsys, "label", cid, "--undo", "--by", "ann", "--pool", pool_dir)
    assert code == 0 and out == f"{cid[:12]}  ann had no label on it: nothing to undo  (consensus: love)\n"
    code, out, _ = run(capsys, "label", cid, "--undo", "--by", "ann", "--pool", pool_dir, "--json")
    assert json.loads(out) == {"id": cid, "labeler": "ann", "tier": None, "at": None, "consensus": "love"}
    code, out, _ = run(capsys, "label", cid, "--undo", "--by", "ben", "--pool", pool_dir)
    assert code == 0 and out == f"{cid[:12]}  ben: cleared  (consensus: unlabelled)\n"
    with Pool.open(pool_dir) as pool:  # ann's undos appended nothing; ben's did
        assert [(h.tier, h.labeler) for h in pool.label_history(cid)] == [("love", "ben"), (None, "ben")]
