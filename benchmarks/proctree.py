"""The process tree under this Python process, read from /proc: CPU time and memory.

Benchmarks share a 2-core machine with whatever else runs, so "cores busy" is measured on our
own tree (every process below this one: the Playwright driver, the browsers, their renderer
and GPU processes), not machine-wide. Processes exit during a run (a closed page takes its
renderer with it), so `CpuMeter` samples every 50 ms and keeps each process's last reading.
`GpuMeter` samples the card's utilisation (nvidia-smi) the same way, for the GPU path's rows.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                continue
    below, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - below
        below |= frontier
    return below


def cpu_seconds(pid: int) -> float | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def tree_pss_mb(root: int) -> float:
    """PSS of every process below `root`, in MiB (PSS splits shared pages fairly; RSS double-counts)."""
    total_kb = 0
    for pid in descendants(root):
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kb += int(line.split()[1])
                    break
        except OSError:
            continue
    return total_kb / 1024


def process_kind(pid: int) -> str:
    """What a process in the tree is: Chromium's gpu / renderer / utility / zygote processes by their
    --type switch, the browser itself, Playwright's driver (node), this Python, or other (the
    isolation wrapper, Chromium's crash handler). Render worker processes count as Python."""
    if pid == os.getpid():
        return "python"
    try:
        argv = (Path(f"/proc/{pid}") / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    for arg in b" ".join(argv).split():  # Chromium's children rewrite their argv as one string
        if arg.startswith(b"--type="):
            kind = arg[7:].decode(errors="replace")
            return "gpu" if kind == "gpu-process" else kind
    head = Path(argv[0].decode(errors="replace")).name if argv and argv[0] else ""
    if "chrom" in head or "headless_shell" in head:
        return "browser"
    if head.startswith("python"):  # a render worker process (train/render_workers.py)
        return "python"
    return "driver" if head == "node" or any(b"playwright" in a for a in argv[:3]) else "other"


def machine_busy_s() -> float:
    """CPU seconds all of this machine's cores have been busy since boot (/proc/stat: all but idle and iowait)."""
    user, nice, system, idle, iowait, irq, softirq, steal = (
        int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9])
    return (user + nice + system + irq + softirq + steal) / _TICK


class CpuWindows:
    """Cores busy over windows of time, from a reading at each end (no sampling thread, so nothing of the
    meter's own runs inside the window): the whole machine's, and this process's own. Only these two: a
    sketch's renderer lives for one document, so readings at a window's ends miss most of the tree's."""

    @staticmethod
    def _read() -> tuple[float, float, float]:
        return time.perf_counter(), machine_busy_s(), cpu_seconds(os.getpid()) or 0.0

    def start(self):
        """A window's start (pass it to `cores`)."""
        return self._read()

    def cores(self, start) -> dict[str, float]:
        """Cores busy on average since `start`: {"machine": ..., "trainer": this process's}."""
        (t0, busy0, own0), (t1, busy1, own1) = start, self._read()
        seconds = max(t1 - t0, 1e-9)
        return {"machine": (busy1 - busy0) / seconds, "trainer": (own1 - own0) / seconds}


class CpuMeter:
    """CPU seconds used by the tree below this process (plus this process) while active; `mark()` and
    `since(mark)` give a window of it, split by process kind."""

    def __init__(self, interval_s: float = 0.05):
        self.interval_s = interval_s
        self._last: dict[int, float] = {}
        self._start: dict[int, float] = {}
        self._kind: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        for pid in descendants(os.getpid()) | {os.getpid()}:
            cpu = cpu_seconds(pid)
            if cpu is not None:
                if pid not in self._start:
                    self._start[pid] = cpu
                # a zygote's fork takes its --type a moment later, and the isolation wrapper execs Chromium
                if self._kind.get(pid, "zygote") in ("zygote", "other"):
                    self._kind[pid] = process_kind(pid)
                self._last[pid] = cpu

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval_s)

    def __enter__(self) -> CpuMeter:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def seconds(self) -> float:
        return sum(self._last[p] - self._start[p] for p in self._last)

    def mark(self) -> dict[int, float]:
        """Every process's CPU seconds now (the start of a window)."""
        self._sample()
        return dict(self._last)

    def since(self, mark: dict[int, float]) -> dict[str, float]:
        """CPU seconds per process kind since `mark` (a process that has ended counts to its last sample)."""
        self._sample()
        by_kind: dict[str, float] = {}
        for pid, cpu in list(self._last.items()):
            kind = self._kind.get(pid, "other")
            by_kind[kind] = by_kind.get(kind, 0.0) + cpu - mark.get(pid, self._start[pid])
        return by_kind


class GpuMeter:
    """The card's utilisation (nvidia-smi's utilization.gpu: the share of time any work of any
    process ran on it) sampled every 100 ms while active; `since(t)` gives the mean in percent from
    `time.perf_counter()` `t` on, or None where there is no nvidia-smi."""

    def __init__(self):
        self._samples: list[tuple[float, int]] = []
        self._proc = None

    def __enter__(self) -> GpuMeter:
        try:
            self._proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "100"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return self
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        for line in self._proc.stdout:
            first = line.split(",")[0].strip()  # the first GPU's
            if first.isdigit():
                self._samples.append((time.perf_counter(), int(first)))

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)

    def since(self, start: float) -> float | None:
        got = [u for t, u in self._samples if t >= start]
        return round(sum(got) / len(got), 1) if got else None
