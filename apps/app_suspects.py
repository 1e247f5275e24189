"""The app's Suspects view: `salon audit --suspects K`'s list, for a person to mark hack or fine.

    salon audit RUN_DIR --suspects 24 && salon app --run RUN_DIR      # then the Suspects tab

A Gradio view like the grid (a click is the natural gesture): the run's suspects, highest reward
first, captioned with reward, flags and your mark; opening one shows it large with what the audit
flagged, and the buttons mark it as the logged-in user. Marks are appended to RUN_DIR/reviews.db
(salon.train.eval.reviews); `salon audit RUN_DIR` reports the share marked as hacks.
Named endpoints: /suspects (run) -> the list with every labeler's mark, /suspect_mark (run,
rollout_id, verdict) -> the stored mark.
"""

from __future__ import annotations

import gradio as gr

from salon.apps.app_checkpoints import run_named
from salon.apps.app_grid import gallery_with_detail
from salon.apps.app_label import store_errors
from salon.pool.errors import PoolError
from salon.train.eval.reviews import VERDICTS
from salon.train.eval.suspects import load_suspects


def suspects_view(state, runs: dict, refresh_on: list) -> None:
    def run_of(name: str):
        return run_named(runs, name)

    def listed(run: str) -> list[dict]:
        """The run's suspects, each with every labeler's latest mark."""
        r = run_of(run)
        marks = r.reviews.current_marks()
        return [{**s, "marks": marks.get(s["rollout_id"], {})} for s in load_suspects(r.dir)]

    def show(run: str, request: gr.Request):
        me = state.user(request)
        items = listed(run)
        thumbs = [(s["image"], f"{s['reward']:.3f} · {', '.join(s['flags'])} · {s['marks'].get(me, 'unmarked')}")
                  for s in items]
        note = (f"{len(items)} suspects of **{run}**, highest reward first; "
                f"{sum(me in s['marks'] for s in items)} marked by you" if items else
                f"no suspects for **{run}** yet: run `salon audit {run_of(run).dir} --suspects 24`")
        return thumbs, [s["rollout_id"] for s in items], note, gr.update(visible=False)

    def open_(run: str, ids: list[str], evt: gr.SelectData, request: gr.Request):
        rid = ids[evt.index]
        s = next(x for x in listed(run) if x["rollout_id"] == rid)
        return rid, s["image"], describe(s, state.user(request)), gr.update(visible=True)

    def describe(s: dict, me: str) -> str:
        others = ", ".join(f"{k}: {v}" for k, v in sorted(s["marks"].items())) or "nobody yet"
        return (f"**{s['rollout_id']}** · step {s['step']} · {s['subject'] or '—'}  \n"
                f"reward **{s['reward']:.3f}** · flagged: **{', '.join(s['flags'])}**  \n"
                f"your mark: **{s['marks'].get(me, '—')}** · marks: {others}")

    def mark_as(verdict: str):
        def fn(run: str, rid: str, request: gr.Request):
            if not rid:
                raise gr.Error("open a suspect first: click a thumbnail")
            return describe(mark(run, rid, verdict, request)["suspect"], state.user(request))
        return fn

    def mark(run: str, rid: str, verdict: str, request: gr.Request) -> dict:
        with store_errors():
            s = next((x for x in listed(run) if x["rollout_id"] == rid), None)
            if s is None:
                raise PoolError(f"{rid!r} is not on {run}'s suspects list: run salon audit --suspects again")
            row = run_of(run).reviews.mark(s, verdict, state.user(request))
            return {"row": row, "suspect": next(x for x in listed(run) if x["rollout_id"] == rid)}

    def suspects(run: str) -> list[dict]:
        """A run's suspects (highest reward first) with every labeler's latest mark."""
        with store_errors():
            return [{k: v for k, v in s.items() if k != "image"} for s in listed(run)]

    def suspect_mark(run: str, rollout_id: str, verdict: str, request: gr.Request) -> dict:
        """Mark one of a run's suspects as a hack or fine (as the logged-in user)."""
        row = mark(run, rollout_id, verdict, request)["row"]
        return {"seq": row.seq, "rollout_id": row.rollout_id, "verdict": row.verdict, "labeler": row.labeler}

    names = list(runs)
    with gr.Row():
        run = gr.Dropdown(names, value=names[0], label="run", scale=3)
        refresh = gr.Button("refresh", scale=0)
    note = gr.Markdown(elem_id="salon-suspects-note")
    ids = gr.State([])
    gallery, selected, detail, big, info, buttons = gallery_with_detail("salon-suspects", 6,
                                                                        {v: v for v in VERDICTS})
    gr.on([run.input, refresh.click, *refresh_on], show, [run], [gallery, ids, note, detail],
          api_visibility="private")
    gallery.select(open_, [run, ids], [selected, big, info, detail], api_visibility="private")
    for verdict, button in buttons.items():
        button.click(mark_as(verdict), [run, selected], [info], api_visibility="private")
    gr.api(suspects, api_name="suspects")
    gr.api(suspect_mark, api_name="suspect_mark")
