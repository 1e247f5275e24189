"""The publish view of the curation app: what the pool holds, its dataset card, a push to the Hub.

Stats per tier, model and labeler with the labelers' agreement (salon.pool.stats); the card
preview is the README.md that `salon pool export` writes (built on request: it exports the
pool into a temporary folder); push is `salon pool push` (salon.pool.hub.push), which records
the release, whose revision is shown. The Hub token is HF_TOKEN or the saved login, the
endpoint HF_ENDPOINT, as for the command line: the host's token, so only the app's admins may
push (AppState.admin).

Named endpoints: /card () -> markdown, /push (repo_id, private, message) -> revision text.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import gradio as gr

from salon.apps.app_label import store_errors


def stats_markdown(stats: dict) -> str:
    t, a = stats["tiers"], stats["agreement"]
    kappa = "n/a" if a["kappa"] is None else f"{a['kappa']:.3f}"
    lines = [f"**{stats['candidates']}** candidates · " + " · ".join(f"{k} **{v}**" for k, v in t.items())
             + f" · near-duplicates {stats['near_duplicates']} · pairwise choices {stats['pair_choices']}",
             "", "| model | candidates | passed gate | rejected | not rendered |", "|---|---|---|---|---|"]
    lines += [f"| {m} | {c['candidates']} | {c['ok']} | {c['rejected']} | {c['unrendered']} |"
              for m, c in stats["by_model"].items()]
    lines += ["", "| labeler | candidates labelled |", "|---|---|"]
    lines += [f"| {who} | {n} |" for who, n in stats["labelers"].items()] or ["| — | 0 |"]
    lines += ["", f"agreement: {a['method'] or 'needs two labelers on the same candidates'}, "
                  f"kappa {kappa} over {a['candidates']} shared candidates"]
    if stats["latest_release"]:
        r = stats["latest_release"]
        lines.append(f"latest release: `{r['repo_id']}@{r['revision']}` ({r['pushed_at']})")
    return "\n".join(lines)


def publish_view(state, refresh_on: list) -> None:
    """`refresh_on`: more triggers that reload the stats (page load, the tab opening)."""
    pool = state.pool

    def summary_text() -> str:
        return stats_markdown(pool.stats())

    def card() -> str:
        """The dataset card the next push would publish."""
        from salon.pool.export import export_pool

        with tempfile.TemporaryDirectory(dir=pool.dir, prefix=".card-") as tmp, store_errors():
            result = export_pool(pool, Path(tmp) / "export")
            return (result.path / "README.md").read_text(encoding="utf-8")

    def push(repo_id: str, private: bool, message: str, request: gr.Request) -> str:
        """Export and push the pool to a Hub dataset repo (admins only); returns the revision."""
        from salon.pool.hub import push as push_pool

        state.admin(request, "push to the Hub")
        if not repo_id.strip():
            raise gr.Error("give a repo id: namespace/name")
        with store_errors():
            release = push_pool(pool, repo_id.strip(), private=bool(private),
                                message=message.strip() or None)
        return (f"pushed **{release.repo_id}@{release.revision}** ({release.labelled} labelled "
                f"of {release.candidates} candidates). Judges pin this revision.")

    summary = gr.Markdown(elem_id="salon-stats")
    refresh = gr.Button("refresh stats", size="sm")
    with gr.Row():
        repo = gr.Textbox(label="dataset repo id", placeholder="you/salon-pool", scale=2)
        private = gr.Checkbox(label="private")
        message = gr.Textbox(label="commit message (optional)", scale=2)
        go = gr.Button("Push to the Hub", variant="primary")
    pushed = gr.Markdown(elem_id="salon-pushed")
    preview = gr.Button("preview the dataset card", size="sm")
    card_text = gr.Code(language="markdown", label="README.md", interactive=False)

    gr.on([refresh.click, *refresh_on], summary_text, None, summary, api_visibility="private")
    preview.click(card, None, card_text, api_name="card")
    go.click(push, [repo, private, message], pushed, api_name="push").then(
        summary_text, None, summary, api_visibility="private")
