"""`salon pool ls` lists candidate ids with filters (tier, model, subject, gate verdict, labeler),
in text and as JSON lines, so `salon pool label` can be fed from the command line."""

from __future__ import annotations

import json

from salon.apps.cli import main

SKETCH = "function setup() {\n  createCanvas(600, 600, WEBGL);\n}\n"


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main(["pool", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _pool(capsys, tmp_path, make_png):
    (tmp_path / "a.png").write_bytes(make_png(1))
    (tmp_path / "b.png").write_bytes(make_png(2))
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"code": SKETCH + "//a\n", "image": "a.png", "model": "hf:a", "subject": "koi"},
        {"code": SKETCH + "//b\n", "image": "b.png", "model": "hf:b", "subject": "iris"},
        {"code": SKETCH + "//c\n", "ok": False, "violations": ["timeout"], "model": "hf:a", "subject": "koi"},
    ]) + "\n")
    pool = tmp_path / "pool"
    code, out, _ = cli(capsys, "import", tmp_path / "rows.jsonl", "--pool", pool, "--json")
    assert code == 0
    return pool, [json.loads(line)["id"] for line in out.splitlines()]


def test_ls_lists_and_filters_ids_that_label_accepts(capsys, tmp_path, make_png):
    pool, (a, b, c) = _pool(capsys, tmp_path, make_png)
    code, out, err = cli(capsys, "ls", "--pool", pool)
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == [a[:12], b[:12], c[:12]]
    assert "rejected: timeout" in out.splitlines()[2] and "3 candidate(s)" in err

    # every printed id feeds `pool label` as it is
    for line in out.splitlines()[:2]:
        assert cli(capsys, "label", line.split()[0], "love", "--by", "ana", "--pool", pool)[0] == 0
    assert cli(capsys, "label", b[:12], "nope", "--by", "ana", "--pool", pool)[0] == 0

    def ids(*flags):
        code, out, _ = cli(capsys, "ls", "--pool", pool, "--json", *flags)
        assert code == 0
        return [json.loads(line)["id"] for line in out.splitlines()]  # the whole stdout is JSON lines

    assert ids() == [a, b, c]
    assert ids("--tier", "love") == [a] and ids("--tier", "nope") == [b] and ids("--tier", "unlabelled") == [c]
    assert ids("--model", "hf:a") == [a, c] and ids("--subject", "iris") == [b]
    assert ids("--gate", "ok") == [a, b] and ids("--gate", "rejected") == [c] and ids("--gate", "unrendered") == []
    assert ids("--unlabelled-by", "ana") == [c] and ids("--labelled-by", "ana") == [a, b]
    assert ids("--limit", "1") == [a]
    code, out, _ = cli(capsys, "ls", "--pool", pool, "--json", "--tier", "love")
    row = json.loads(out)
    assert row["tier"] == "love" and row["labels"] == {"ana": "love"} and row["gate"] == "ok"
    assert row["model"] == "hf:a" and row["subject"] == "koi" and row["image"].endswith(".png")


def test_ls_refuses_a_bad_filter_with_its_own_usage(capsys, tmp_path, make_png):
    pool, _ = _pool(capsys, tmp_path, make_png)
    try:
        main(["pool", "ls", "--pool", str(pool), "--tier", "great"])
    except SystemExit as e:
        assert e.code == 2
    err = capsys.readouterr().err
    assert "usage: salon pool ls" in err and "invalid choice: 'great'" in err


def test_stats_points_to_ls_and_bad_ids_to_ls(capsys, tmp_path, make_png):
    pool, _ = _pool(capsys, tmp_path, make_png)
    _, _, err = cli(capsys, "stats", "--pool", pool)
    assert "salon pool ls" in err
    code, _, err = cli(capsys, "label", "xyz", "love", "--by", "ana", "--pool", pool)
    assert code == 2 and "listed by `salon pool ls`" in err
