"""The label and compare views of the curation app, and their named Gradio API endpoints.

Both views are a `gr.HTML` shell that `app_static/` fills and drives from the keyboard (salon.js
what they share, salon_label.js and salon_compare.js one view each) through the JSON routes of
`app_api` (the hot path never waits on Gradio). Keys, label view:
1 love, 2 okay, 3 nope, s skip, u or Backspace undo, left/right move. Compare view: left
arrow or a = left, right arrow or d = right, t or down arrow = tie, n = new pair; with
`--run RUN_DIR` its mode menu also offers that run's checkpoints, blind (app_checkpoints).

The same actions are Gradio API endpoints for scripts and `gradio_client`:
/label (candidate_id, tier), /undo (candidate_id), /pair_choice (left_id, right_id, winner),
/queue (view, model, subject) -> ids, /stats -> the pool's stats dict. The undocumented
/salon_session gives the page its token for the JSON routes (salon.apps.app_api.Sessions).
"""

from __future__ import annotations

from contextlib import contextmanager

import gradio as gr

from salon.apps.app_api import queue_ids, revealed
from salon.pool.errors import SalonError

LABEL_HTML = """
<div class="salon-label" tabindex="-1">
  <div class="salon-bar">
    <select data-f="view" title="which candidates to show">
      <option value="unlabelled">unlabelled by me</option><option value="all">all</option>
      <option value="love">love</option><option value="okay">okay</option>
      <option value="nope">nope</option></select>
    <select data-f="model"><option value="">every model</option></select>
    <select data-f="subject"><option value="">every subject</option></select>
    <label><input type="checkbox" data-f="rejects"> rejects</label>
    <label><input type="checkbox" data-f="duplicates"> near-duplicates</label>
    <span class="salon-count"></span><span class="salon-ack" data-pending="0"></span>
  </div>
  <div class="salon-main">
    <div class="salon-stage"><div class="salon-empty">loading…</div></div>
    <div class="salon-meta"></div>
  </div>
  <div class="salon-keys"><b>1</b> love <b>2</b> okay <b>3</b> nope <b>s</b> skip
    <b>u</b>/<b>⌫</b> undo <b>←</b> <b>→</b> move</div>
</div>
"""

COMPARE_HTML = """
<div class="salon-compare" tabindex="-1">
  <div class="salon-bar">
    <select data-f="mode" title="what to compare" hidden><option value="">pool paintings</option></select>
    <span class="salon-count"></span><span class="salon-ack" data-pending="0"></span></div>
  <div class="salon-pair"><div class="salon-side" data-side="left"></div>
    <div class="salon-side" data-side="right"></div></div>
  <div class="salon-keys"><b>←</b>/<b>a</b> left <b>→</b>/<b>d</b> right <b>↓</b>/<b>t</b> tie
    <b>n</b> another pair</div>
</div>
"""

# salon.js first: the views' files draw on what it shares (Gradio adds head scripts in order)
HEAD = ('<link rel="stylesheet" href="/salon/static/salon.css">'
        '<script src="/salon/static/salon.js"></script>'
        '<script src="/salon/static/salon_label.js"></script>'
        '<script src="/salon/static/salon_compare.js"></script>')


def label_view() -> None:
    gr.HTML(LABEL_HTML, head=HEAD, js_on_load="window.salon.mountLabel(element)",
            elem_id="salon-label", padding=False)


def compare_view() -> None:
    gr.HTML(COMPARE_HTML, head=HEAD, js_on_load="window.salon.mountCompare(element)",
            elem_id="salon-compare", padding=False)


def api_endpoints(state) -> None:
    """Named endpoints over the same store calls the JSON routes make."""
    pool = state.pool

    def label(candidate_id: str, tier: str, request: gr.Request) -> dict:
        """Label a candidate love, okay or nope as the logged-in user; returns the committed row."""
        with store_errors():
            row = pool.label(pool.resolve_id(candidate_id), tier, state.user(request))
            return committed(row)

    def undo(candidate_id: str, request: gr.Request) -> dict:
        """Clear the logged-in user's tier of a candidate."""
        with store_errors():
            row = pool.undo(pool.resolve_id(candidate_id), state.user(request))
            return committed(row)

    def committed(row) -> dict:
        """A committed label row; the consensus only while its labeler has a tier (`revealed`)."""
        _, agreed = revealed(pool.current_labels([row.candidate_id]).get(row.candidate_id, {}),
                             row.labeler)
        return {"id": row.candidate_id, "tier": row.tier, "labeler": row.labeler,
                "seq": row.seq, "consensus": agreed}

    def pair_choice(left_id: str, right_id: str, winner: str, request: gr.Request) -> dict:
        """Record which of two paintings the user prefers: left, right or tie."""
        with store_errors():
            row = pool.add_pair_choice(pool.resolve_id(left_id), pool.resolve_id(right_id),
                                       winner, state.user(request))
            return {"seq": row.seq, "winner": row.winner, "labeler": row.labeler}

    def queue(view: str, model: str, subject: str, request: gr.Request) -> list[str]:
        """Candidate ids the label view would show (view: unlabelled, all, love, okay, nope)."""
        with store_errors():
            return queue_ids(pool, state.user(request), view, model, subject)["ids"]

    def stats() -> dict:
        """The pool's stats: tiers, models, subjects, labelers, agreement."""
        return pool.stats()

    def salon_session(request: gr.Request) -> str:
        """A token naming the logged-in user to the JSON routes (salon.js's salon-session cookie)."""
        return state.sessions.token_for(state.user(request))

    for fn in (label, undo, pair_choice, queue, stats):
        gr.api(fn, api_name=fn.__name__)
    gr.api(salon_session, api_name="salon_session", api_visibility="undocumented")


@contextmanager
def store_errors():
    """Store errors become Gradio errors whose message reaches the person or client as written."""
    try:
        yield
    except SalonError as e:
        raise gr.Error(str(e)) from None
