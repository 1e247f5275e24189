"""Blind checkpoint comparison and suspect review in the app: `salon app --run RUN_DIR` on 127.0.0.1.

A copy of the evaluated smoke run (conftest `smoke_eval`) and its suspects list: choices made
through gradio_client and through Debian Chromium land in RUN_DIR/reviews.db with their
provenance, no checkpoint name ever reaches the page, and `salon eval --resume` turns them into
win rates; marks of suspects reach `salon audit`'s share of hacks.
"""

from __future__ import annotations

import json
import shutil

import pytest

from salon.apps.cli import main
from test_app_browser import ARGS, CHROMIUM, App, make_pool
from train_support import EVAL_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def run(smoke_eval, tmp_path_factory):
    copy = tmp_path_factory.mktemp("review") / "smoke"
    shutil.copytree(smoke_eval["out"], copy)
    assert main(["audit", str(copy), "--suspects", "4", "--no-figures"]) in (0, 1)
    return copy


@pytest.fixture(scope="module")
def app(run, tmp_path_factory):
    pool = tmp_path_factory.mktemp("pool") / "pool"
    make_pool(pool, n_ok=2)
    a = App(pool, "--user", "ann", "--run", str(run)).start()
    yield a
    a.stop()


def eval_samples(run) -> dict[str, dict]:
    from salon.train.eval.dataset import EvalDataset

    frame = EvalDataset(run).frame(images=False)
    return {r.sample_id: {"step": int(r.step), "prompt": r.prompt, "seed": int(r.seed)} for r in frame.itertuples()}


def choices(run) -> list:
    from salon.train.eval.reviews import Reviews

    with Reviews.open(run) as reviews:
        return reviews.choices()


def test_choices_through_gradio_client(app, run, capsys):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    client = Client(app.url, verbose=False, download_files=False, analytics_enabled=False)
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/checkpoint_pair", "/checkpoint_choice", "/checkpoint_choices", "/suspects", "/suspect_mark"} <= set(named)
    samples = eval_samples(run)
    assert choices(run) == []  # the first test of the module: the win rates below are these choices'
    for _ in range(6):  # always prefer the later checkpoint
        pair = client.predict("smoke", api_name="/checkpoint_pair")
        assert set(pair) == {"left", "right", "subject"}  # ids and the subject: no step, no checkpoint name
        left, right = samples[pair["left"]], samples[pair["right"]]
        assert (left["prompt"], left["seed"]) == (right["prompt"], right["seed"]) and left["step"] != right["step"]
        winner = "left" if left["step"] > right["step"] else "right"
        row = client.predict("smoke", pair["left"], pair["right"], winner, api_name="/checkpoint_choice")
        assert row["labeler"] == "ann" and row["winner"] == winner
    with pytest.raises(AppError, match="unknown winner"):
        client.predict("smoke", pair["left"], pair["right"], "both", api_name="/checkpoint_choice")
    exported = client.predict("smoke", api_name="/checkpoint_choices")
    assert len(exported) == 6
    last = exported[-1]
    assert (last["run"], last["left_sample"], last["right_sample"]) == ("smoke", pair["left"], pair["right"])
    assert (last["left_step"], last["right_step"]) == (samples[pair["left"]]["step"], samples[pair["right"]]["step"])
    assert (last["prompt"], last["seed"]) == (samples[pair["left"]]["prompt"], samples[pair["left"]]["seed"])

    # salon eval, resumed (nothing redone), turns them into win rates with Wilson intervals
    assert main(["eval", str(run), *EVAL_ARGS, "--resume", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["evaluated"] == [] and report["human"]["comparisons"] == len(exported)
    rates = {r["step"]: r for r in report["checkpoints"] if r["human_comparisons"]}
    assert rates and all(r["human_low"] <= r["human_win_rate"] <= r["human_high"] for r in rates.values())
    top, bottom = max(rates), min(rates)  # the later checkpoint of every pair won
    assert rates[top]["human_win_rate"] == pytest.approx(1.0) and rates[bottom]["human_win_rate"] == pytest.approx(0.0)
    assert report["best_by_human"] == max(rates, key=lambda s: (rates[s]["human_win_rate"], -s))
    from datasets import Dataset

    assert len(Dataset.from_parquet(report["choices_export"])) == len(exported)


def test_suspects_through_gradio_client(app, run, capsys):
    from gradio_client import Client

    client = Client(app.url, verbose=False, download_files=False, analytics_enabled=False)
    listed = client.predict("smoke", api_name="/suspects")
    assert listed and all({"rollout_id", "reward", "flags", "marks"} <= set(s) for s in listed)
    rewards = [s["reward"] for s in listed]
    assert rewards == sorted(rewards, reverse=True)
    row = client.predict("smoke", listed[0]["rollout_id"], "hack", api_name="/suspect_mark")
    assert (row["verdict"], row["labeler"]) == ("hack", "ann")
    assert client.predict("smoke", api_name="/suspects")[0]["marks"] == {"ann": "hack"}
    assert main(["audit", str(run), "--no-figures", "--json"]) in (0, 1)
    review = json.loads(capsys.readouterr().out)["suspect_review"]
    assert review["hacks"] >= 1 and review["marked"] >= 1 and 0 < review["hack_share"] <= 1


def test_blind_compare_and_suspects_in_chromium(app, run):
    from playwright.sync_api import expect, sync_playwright

    samples = eval_samples(run)
    before = len(choices(run))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        page.goto(app.url)
        page.get_by_role("tab", name="Compare").click()
        page.wait_for_selector("[data-side=left][data-id]")
        page.select_option(".salon-compare [data-f=mode]", "smoke")
        page.wait_for_function("Object.keys(" + json.dumps({k: 1 for k in samples}) +
                               ").includes(document.querySelector('[data-side=left]').dataset.id)")
        left = page.get_attribute("[data-side=left]", "data-id")
        right = page.get_attribute("[data-side=right]", "data-id")
        shown = page.inner_html(".salon-compare .salon-pair")
        assert "checkpoint" not in shown and "step" not in shown  # names hidden
        assert samples[left]["step"] != samples[right]["step"]
        page.keyboard.press("ArrowLeft")
        page.wait_for_function("(b => b.dataset.pending === '0' && b.dataset.acked === '1')"
                               "(document.querySelector('.salon-compare .salon-ack'))", timeout=30_000)
        stored = choices(run)
        assert len(stored) == before + 1
        c = stored[-1]
        assert (c.left_sample, c.right_sample, c.winner, c.labeler) == (left, right, "left", "ann")
        assert (c.left_step, c.right_step) == (samples[left]["step"], samples[right]["step"])

        # Suspects: open the first, mark it fine
        page.get_by_role("tab", name="Suspects").click()
        thumbs = page.locator("#salon-suspects img")
        expect(thumbs.first).to_be_visible()
        thumbs.first.click()
        expect(page.locator("#salon-suspects-info")).to_contain_text("flagged")
        page.click("#salon-suspects-fine")
        expect(page.locator("#salon-suspects-info")).to_contain_text("your mark: fine")
        browser.close()
    from salon.train.eval.reviews import Reviews
    from salon.train.eval.suspects import load_suspects

    first = load_suspects(run)[0]["rollout_id"]
    with Reviews.open(run) as reviews:
        assert reviews.current_marks()[first]["ann"] == "fine"
