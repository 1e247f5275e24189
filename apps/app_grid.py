"""The grid view of the curation app: thumbnails by consensus tier, click one to open, relabel.

A Gradio view (a click is the natural gesture here, so Gradio's round-trip is fine). The tier
radio shows the counts; a page holds PAGE thumbnails in pool order. Opening a thumbnail shows
it large with its labels; the buttons relabel it as the logged-in user and refresh the grid.
Named endpoint: /grid (tier, page) -> candidate ids on that page.
"""

from __future__ import annotations

import gradio as gr

from salon.apps.app_label import store_errors
from salon.pool.models import TIERS

PAGE = 60
CHOICES = (*TIERS, "unlabelled")


def gallery_with_detail(elem_id: str, columns: int, buttons: dict):
    """Thumbnails, and under them a hidden row showing the opened one large beside its description
    and one button per `buttons` entry ({key: label}); ids are elem_id, elem_id-info, elem_id-LABEL.
    Returns (gallery, selected state, detail row, image, description, {key: button})."""
    # fit_columns off: Gradio otherwise stretches a page of two paintings over the whole width (two ~600 px
    # "thumbnails" a row); `columns` a row keeps each about 200 px wide on a laptop screen, however many there are
    gallery = gr.Gallery(columns=columns, fit_columns=False, height=520, allow_preview=False, object_fit="cover",
                         show_label=False, elem_id=elem_id)
    selected = gr.State(None)
    with gr.Row(visible=False) as detail:
        big = gr.Image(interactive=False, height=420, show_label=False, scale=2)
        with gr.Column(scale=1):
            info = gr.Markdown(elem_id=f"{elem_id}-info")
            with gr.Row():
                made = {key: gr.Button(label, elem_id=f"{elem_id}-{label}") for key, label in buttons.items()}
    return gallery, selected, detail, big, info, made


def grid_view(state, refresh_on: list) -> None:
    """`refresh_on`: more triggers that reload the grid (page load, the tab opening)."""
    pool = state.pool

    def choices() -> list[tuple[str, str]]:
        tiers = pool.stats()["tiers"]
        return [(f"{t} ({tiers[t]})", t) for t in CHOICES]

    def page_of(tier: str, page: float) -> list[str]:
        """Candidate ids of one grid page: consensus tier (or unlabelled), pool order."""
        start = (max(1, int(page or 1)) - 1) * PAGE
        with store_errors():
            return [c.id for c in pool.candidates(tier=tier, limit=PAGE, offset=start)]

    def show(tier: str, page: float):
        # A candidate without an image (render failed, file gone) has no thumbnail to click.
        shown = [i for i in page_of(tier, page) if (p := pool.image_path(i)) and p.exists()]
        thumbs = [(str(pool.image_path(i)), i[:8]) for i in shown]
        return gr.update(choices=choices(), value=tier), thumbs, shown, gr.update(visible=False)

    def open_(shown: list[str], evt: gr.SelectData, request: gr.Request):
        cid = shown[evt.index]
        return cid, str(pool.image_path(cid)), describe(cid, state.user(request)), \
            gr.update(visible=True)

    def describe(cid: str, me: str) -> str:
        c = pool.get(cid)
        labels = pool.current_labels([cid]).get(cid, {})
        who = ", ".join(f"{k}: {v}" for k, v in sorted(labels.items())) or "nobody yet"
        return (f"**{cid[:12]}** · {c.subject or '—'} · {c.model or '—'}  \n"
                f"your label: **{labels.get(me, '—')}** · consensus: "
                f"**{pool.consensus_tier(cid) or 'unlabelled'}** ({who})")

    def relabel(tier: str | None):
        def fn(cid: str, request: gr.Request):
            if not cid:
                raise gr.Error("open a painting first: click a thumbnail")
            with store_errors():
                me = state.user(request)
                pool.label(cid, tier, me) if tier else pool.undo(cid, me)
            return describe(cid, me), gr.update(choices=choices())
        return fn

    with gr.Row():
        tier = gr.Radio(choices(), value="unlabelled", label="tier", scale=4)
        page = gr.Number(1, precision=0, minimum=1, label="page", scale=1)
        refresh = gr.Button("refresh", scale=0)
    shown = gr.State([])
    gallery, selected, detail, big, info, buttons = gallery_with_detail(
        "salon-grid", 6, {**{t: t for t in TIERS}, None: "undo"})

    outputs = [tier, gallery, shown, detail]
    gr.on([tier.input, page.submit, refresh.click, *refresh_on], show, [tier, page], outputs,
          api_visibility="private")
    gallery.select(open_, [shown], [selected, big, info, detail], api_visibility="private")
    for t, button in buttons.items():
        button.click(relabel(t), [selected], [info, tier], api_visibility="private")
    gr.api(page_of, api_name="grid")
