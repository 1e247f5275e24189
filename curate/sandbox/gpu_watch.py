"""GPU memory bounded from outside the page: the browser's GPU process, watched while a sketch runs.

    watch = GpuWatch(browser_pid, on_card=True)     # pages.py makes one per browser
    watch.used_mb()                                  # what its GPU process holds now (None: unknown)

The page charges every WebGL allocation it sees to its budget (guard.js), which names the refusal
early. What no page-level count can see (a route nobody listed, memory the driver keeps for a
context) still lands in the one process that holds the browser's GPU memory. On the card that is
the NVIDIA driver's figure for that process (NVML through pynvml when installed, else
nvidia-smi); on SwiftShader the resident memory of the process SwiftShader draws in: the GPU
process, or the browser process itself where headless Chromium keeps its GPU work in-process
(Debian's Chromium 156 with --disable-gpu starts no GPU process). render.py samples it before the
sketch and every WATCH_EVERY_S while it runs, and a sketch whose process grows past
RenderConfig.gpu_process_mb is killed with its page: `runtime_error`.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

WATCH_EVERY_S = 0.25


def gpu_process(browser_pid: int) -> int | None:
    """The pid of the GPU process among the browser's children, or None."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == browser_pid and b"--type=gpu-process" in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


def resident_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


_nvml: bool | None = None  # NVML initialised (None: not tried yet; False: not available)
_listing_lock = threading.Lock()
_listing: tuple[float, dict[int, float]] = (0.0, {})  # when, and every process's MB: one read serves all browsers


def _read_listing() -> dict[int, float]:
    """GPU memory in MB per process on every device, from NVML (initialised once) or nvidia-smi."""
    global _nvml
    if _nvml is None:
        try:
            import pynvml

            pynvml.nvmlInit()
            _nvml = True
        except Exception:
            _nvml = False
    used: dict[int, float] = {}
    if _nvml:
        import pynvml

        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            for listing in (pynvml.nvmlDeviceGetComputeRunningProcesses, pynvml.nvmlDeviceGetGraphicsRunningProcesses):
                for p in listing(handle):
                    if p.usedGpuMemory:
                        used[p.pid] = used.get(p.pid, 0.0) + p.usedGpuMemory / 2**20
        return used
    smi = shutil.which("nvidia-smi")
    if smi:
        out = subprocess.run([smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            if "," in line:
                pid, mb = line.split(",")
                used[int(pid)] = used.get(int(pid), 0.0) + float(mb)
    return used


def card_mb(pid: int) -> float | None:
    """The NVIDIA driver's GPU memory for one process, or None when it does not list it. One read
    of the driver's listing, at most every WATCH_EVERY_S, serves every browser's watch."""
    global _listing
    with _listing_lock:
        if time.monotonic() - _listing[0] >= WATCH_EVERY_S:
            try:
                _listing = (time.monotonic(), _read_listing())
            except Exception:  # a driver or tool that does not answer: nothing to read this time
                _listing = (time.monotonic(), {})
        return _listing[1].get(pid)


class GpuWatch:
    """What one browser's GPU process holds: on the card when it draws there, else in RAM."""

    def __init__(self, browser_pid: int | None, on_card: bool):
        self.browser_pid, self.on_card = browser_pid, on_card
        self._pid: int | None = None

    def used_mb(self) -> float | None:
        if self.browser_pid is None:
            return None
        if self._pid is None or not Path(f"/proc/{self._pid}").exists():
            self._pid = gpu_process(self.browser_pid) or (None if self.on_card else self.browser_pid)
        if self._pid is None:
            return None
        return card_mb(self._pid) if self.on_card else resident_mb(self._pid)
