"""The generate view of the curation app: a generation run in the background, with progress.

The form fills a `GenerateConfig` (salon.curate.generate) and starts the run in a thread; the
run stores each candidate as soon as it is rendered, so new candidates join the label queue
(the label view appends them when it nears the end of its queue) while the run goes on. One
run at a time per app. A timer shows progress: candidates of the subject stored since the
start, against N per model, and the run's report when it ends.

Generating spends the host's model credentials, so only the app's admins may start a run
(AppState.admin), and OPENAI_API_KEY goes only to a base URL configured when the app started
(AppConfig.generate_urls): the base URL is a dropdown of those without custom values, so
Gradio refuses any other value, from the page and the API alike, before `start` runs.

Named endpoints: /generate (subject, models, n, base_url, guides, rounds) -> status text,
/generation_status () -> status text.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import gradio as gr

from salon.pool.errors import SalonError


@dataclass
class GenerationJob:
    """One background run: its config, how far it got, how it ended."""

    config: object
    baseline: int                      # candidates of the subject before the run
    started: float = field(default_factory=time.monotonic)
    report: dict | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        from salon.curate.generate import generate

        try:
            self.report = generate(self.config).as_dict()
        except SalonError as e:
            self.error = str(e)
        except Exception as e:  # a run must never die silently in a thread
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self.done.set()


def subject_count(pool, subject: str) -> int:
    return pool.stats()["by_subject"].get(subject, {}).get("candidates", 0)


def generate_view(state) -> None:
    from salon.curate.prompts import SubjectBook

    pool = state.pool
    subjects = sorted(SubjectBook.load().subjects)

    urls = state.config.generate_urls

    def start(subject: str, models: str, n: float, base_url: str, guides: bool, rounds: float,
              request: gr.Request) -> str:
        """Start a generation run in the background (admins only); returns its status."""
        from salon.curate.backends import BackendConfig
        from salon.curate.generate import GenerateConfig

        state.admin(request, "generate")
        if state.job is not None and not state.job.done.is_set():
            raise gr.Error("a generation run is already going: wait for it to finish")
        names = [m.strip() for m in models.replace(",", "\n").splitlines() if m.strip()]
        try:
            config = GenerateConfig(
                subject=subject, models=names, n=int(n or 0), pool=pool.dir, guides=bool(guides),
                rounds=int(rounds or 0), progress=False,
                backend=BackendConfig(base_url=base_url or None))
        except SalonError as e:
            raise gr.Error(str(e)) from None
        job = GenerationJob(config, subject_count(pool, subject))
        state.job = job
        threading.Thread(target=job.run, name="salon-generate", daemon=True).start()
        return status()

    def status() -> str:
        """The current or last generation run: progress, then its report."""
        job = state.job
        if job is None:
            return "no generation run yet"
        c = job.config
        head = (f"**{c.subject}** · {', '.join(c.models)} · N {c.n} per model"
                + (f" · {c.rounds} round(s)" if c.rounds else "")
                + f" · {time.monotonic() - job.started:.0f} s")
        if not job.done.is_set():
            new = subject_count(pool, c.subject) - job.baseline
            return f"{head}  \nrunning: **{new}** new candidates stored so far (they join the label queue)"
        if job.error:
            return f"{head}  \n**failed:** {job.error}"
        lines = [f"{head}  \ndone: **{job.report['stored']}** new candidates"]
        for model, counts in job.report["models"].items():
            lines.append(f"- {model}: ok {counts['ok']}, rejected {counts['rejected']}, "
                         f"failed {counts['failed']}"
                         + (f", stopped: {counts['stopped']}" if counts["stopped"] else "")
                         + "".join(f"; {n} x {e}" for e, n in counts["errors"].items()))
        return "\n".join(lines)

    with gr.Row():
        subject = gr.Dropdown(subjects, value=subjects[0] if subjects else None,
                              allow_custom_value=True, label="subject")
        models = gr.Textbox(label="models (backend:name, one per line or comma-separated)",
                            placeholder="openai:Qwen/Qwen3-Coder-30B-A3B-Instruct", lines=2)
        base_url = gr.Dropdown([(u or "the openai default (api.openai.com)", u) for u in urls],
                               value=urls[0], allow_custom_value=False,  # the key goes nowhere else
                               label="OpenAI-compatible base URL (set at start: --base-url)")
    with gr.Row():
        n = gr.Number(4, precision=0, minimum=1, label="N per model")
        rounds = gr.Number(0, precision=0, minimum=0, label="critique rounds")
        guides = gr.Checkbox(label="guide photos (from `salon curate guides`)")
        go = gr.Button("Generate", variant="primary", elem_id="salon-generate")
    progress = gr.Markdown(status(), elem_id="salon-generate-status")
    timer = gr.Timer(1.0, active=False)  # ticks only while a run is going

    def tick():
        return status(), gr.Timer(active=state.job is not None and not state.job.done.is_set())

    go.click(start, [subject, models, n, base_url, guides, rounds], progress,
             api_name="generate").success(tick, None, [progress, timer], api_visibility="private")
    timer.tick(tick, None, [progress, timer], show_progress="hidden", api_visibility="private")
    gr.api(status, api_name="generation_status")
