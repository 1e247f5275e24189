"""Which GL path Chromium draws WebGL on: the node's GPU, or SwiftShader on its CPUs.

    python -m salon.curate.sandbox.gpu [--chromium PATH] [--json]   # what this host has, and each flag set's outcome
    RenderConfig(gpu="auto")    # probe once at start-up, fall back to SwiftShader (the default)
    RenderConfig(gpu="on")      # the GPU or a SetupError that says what is missing
    RenderConfig(gpu="off")     # SwiftShader, as on a machine without a GPU
    RenderConfig(gpu="on", gl="vulkan-icd")   # one flag set: exact repeats, 2D canvases on the CPU

SwiftShader rasterises in software: one painting keeps about 1.8 cores busy for 1 to 7 s. A
GPU node draws the same brush stamps as a few thousand textured quads. What draws on an NVIDIA
card headless (measured on an H200, shared/reference/gpu-rendering.md): a full Chromium build
(Debian's; not the headless-shell builds), no display at all, and the Vulkan loader pointed at
NVIDIA's ICD (`VK_DRIVER_FILES`), whose library needs libglvnd's `libGLdispatch.so.0`. Then
ANGLE over Vulkan draws on the card, both through `--use-angle=vulkan` (`vulkan-canvas`, which
also rasterises p5.brush's 2D-canvas masks there) and through Chromium's own software route
(`--disable-gpu`, `vulkan-icd`, which would load SwiftShader's ICD and loads NVIDIA's instead).
The ANGLE-over-EGL and plain EGL sets tried before never drew there and are gone.
`choose_gl_path` launches a browser per flag set, in order, and asks WebGL who renders
(`WEBGL_debug_renderer_info`) and whether a drawn pixel reads back; the first set whose
renderer is NVIDIA's wins (`RenderConfig.gl` names the one to use instead). The probe runs once per process and only where an NVIDIA device
node exists, so CPU machines pay nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import logging
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)

GPU_MODES = ("auto", "on", "off")
SWIFTSHADER = "swiftshader"
# The software path: `--disable-gpu` reaches SwiftShader 3 to 7 times faster than the prior
# art's `--use-gl=angle --use-angle=swiftshader` flags (benchmarks/bench_render.py).
SWIFTSHADER_ARGS = ["--disable-gpu"]
# GPU flag sets, tried in this order, each with the loader pointed at NVIDIA's ICD. Measured on the
# H200 (benchmarks/probe_canvas_flags.py, results/probe_canvas_flags_h200.jsonl: heavy renders/s in
# steady state, and 9 sketches rendered 6 times each at one seed): p5.brush draws tens of thousands
# of polygons per painting into 2D-canvas masks, and where those are rasterised decides the speed.
# `vulkan-canvas` puts Canvas2D on the card too: 8.1 renders/s. `vulkan-icd` (`--disable-gpu`)
# draws WebGL on the card but rasterises the masks on the renderer's CPU (0.5-1.2 s of its main
# thread per heavy painting, results/render_threads_probe_h200.txt): 4.9 renders/s, and the only
# set whose repeats matched to the pixel. On `vulkan-canvas` repeats differed by at most 2 levels,
# in up to 0.57 % of the pixels (one sketch; none in 6 of the 9): render noise far below what
# tells two paintings apart, which the sandbox's same-image checks allow (8 levels). DynamicMSAA,
# which Skia's GPU canvas switches per frame, is off: with it `angle-vulkan` (the bare
# `--use-angle=vulkan` set) was slower (6.6) and up to 9 levels apart, and no variant without
# MSAA was faster or closer.
GPU_FLAG_SETS: dict[str, list[str]] = {
    "vulkan-canvas": ["--use-gl=angle", "--use-angle=vulkan", "--enable-features=Vulkan", "--ignore-gpu-blocklist",
                      "--disable-features=DynamicMSAA"],
    "vulkan-icd": ["--disable-gpu"],
}
SOFTWARE_RENDERERS = ("swiftshader", "llvmpipe", "softpipe", "software")
# Where distributions, NVIDIA's installer and container toolkits put the ICD manifest.
ICD_FOLDERS = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d",
               "/usr/local/nvidia/share/vulkan/icd.d", "/usr/local/nvidia/vulkan/icd.d")


@dataclass
class GLPath:
    name: str  # "swiftshader" or a GPU_FLAG_SETS key
    args: list[str]
    renderer: str = ""  # what WebGL says renders it
    error: str = ""  # why this path did not work (probe only)

    @property
    def gpu(self) -> bool:
        return self.name != SWIFTSHADER


def swiftshader_path() -> GLPath:
    return GLPath(SWIFTSHADER, list(SWIFTSHADER_ARGS), renderer="SwiftShader")


def nvidia_present() -> bool:
    return Path("/dev/nvidiactl").exists() or Path("/proc/driver/nvidia/version").exists()


def find_nvidia_icd(env: dict[str, str] | None = None) -> str | None:
    """NVIDIA's Vulkan ICD manifest: one named by VK_DRIVER_FILES / VK_ICD_FILENAMES, else the
    first `nvidia*.json` in the usual folders."""
    env = os.environ if env is None else env
    for var in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES"):
        for path in filter(None, env.get(var, "").split(os.pathsep)):
            if Path(path).is_file() and "nvidia" in Path(path).read_text(errors="replace").lower():
                return path
    for folder in ICD_FOLDERS:
        found = sorted(glob.glob(os.path.join(folder, "nvidia*.json")))
        if found:
            return found[0]
    return None


def driver_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The browser's environment on the GPU path: the Vulkan loader pointed at NVIDIA's ICD alone
    (a loader that finds no ICD, or SwiftShader's first, falls back to software silently)."""
    env = dict(os.environ if base is None else base)
    icd = find_nvidia_icd(env)
    if icd:
        env["VK_DRIVER_FILES"] = env["VK_ICD_FILENAMES"] = icd
    return env


def missing_for_gpu(chromium: str | None) -> list[str]:
    """What this host lacks for the GPU path, each with what to do (empty: nothing known missing)."""
    if not nvidia_present():
        return ["no NVIDIA device (/dev/nvidiactl): run on the GPU node, or use gpu=auto/off"]
    problems = []
    if chromium and "headless" in Path(chromium).name.lower() + Path(chromium).resolve().name.lower():
        problems.append(f"{chromium} is a headless-shell build, which cannot draw WebGL on an NVIDIA GPU "
                        "without a display: use a full Chromium build (Debian's `chromium`)")
    icd = find_nvidia_icd()
    if icd is None:
        problems.append("no NVIDIA Vulkan ICD manifest (nvidia_icd.json) in VK_DRIVER_FILES, VK_ICD_FILENAMES or "
                        + ", ".join(ICD_FOLDERS) + ": install the driver's Vulkan part or set VK_DRIVER_FILES")
        return problems
    try:
        library = json.loads(Path(icd).read_text())["ICD"]["library_path"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return problems + [f"{icd} is not a Vulkan ICD manifest ({e})"]
    # The driver's library, loaded in a child so this process keeps no GL state: its error names
    # the missing dependency (libGLdispatch.so.0 without libglvnd).
    load = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", library],
                          capture_output=True, text=True, timeout=30)
    if load.returncode != 0:
        why = (load.stderr.strip().splitlines() or ["?"])[-1]
        hint = (" install libglvnd (Debian/Ubuntu: libglvnd0 libgl1 libegl1 libglx0)" if "GLdispatch" in why
                else " check the driver install")
        problems.append(f"NVIDIA's Vulkan driver {library} (from {icd}) does not load: {why};{hint}")
    return problems


# Draws one red clear into a WebGL2 canvas and reads it back: a context that exists but cannot
# draw (a lost or blocklisted one) does not count as working.
_PROBE_JS = """() => {
  const c = document.createElement('canvas'); c.width = c.height = 8;
  const gl = c.getContext('webgl2') || c.getContext('webgl');
  if (!gl) return {renderer: '', drew: false};
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  const renderer = info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);
  gl.clearColor(1, 0, 0, 1); gl.clear(gl.COLOR_BUFFER_BIT);
  const px = new Uint8Array(4); gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
  return {renderer: String(renderer), drew: px[0] === 255 && px[1] === 0};
}"""


async def probe_one(playwright, chromium: str | None, base_args: list[str], name: str, flags: list[str],
                    timeout_s: float = 30.0, explain: bool = False) -> GLPath:
    path = GLPath(name, list(flags))
    browser = None
    try:
        browser = await asyncio.wait_for(playwright.chromium.launch(
            executable_path=chromium, headless=True, args=base_args + flags, env=driver_env()), timeout_s)
        page = await browser.new_page()
        got = await asyncio.wait_for(page.evaluate(_PROBE_JS), timeout_s)
        path.renderer = got["renderer"]
        if not got["drew"]:
            # the GPU process's own lines cost seconds per flag set: only when someone will read them
            why = await asyncio.to_thread(gpu_process_errors, chromium, base_args, flags) if explain else []
            path.error = f"WebGL did not draw (renderer {path.renderer!r})" + (": " + " | ".join(why) if why else "")
        elif any(s in path.renderer.lower() for s in SOFTWARE_RENDERERS):
            path.error = f"fell back to software ({path.renderer})"
    except Exception as e:  # a GPU process that fails to start shows up here
        path.error = str(e).splitlines()[0][:300] or type(e).__name__
    finally:
        if browser is not None:
            try:
                await asyncio.wait_for(browser.close(), 10)
            except Exception:
                pass
    return path


def gpu_process_errors(chromium: str | None, base_args: list[str], flags: list[str], seconds: float = 8.0) -> list[str]:
    """The GPU process's own error lines for a flag set (WebGL only says "no context"): the
    browser is started bare with logging to stderr, given a few seconds, and stopped."""
    import re

    if not chromium:
        return []
    proc = subprocess.Popen([chromium, "--headless", *base_args, *flags, "--enable-logging=stderr", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=driver_env())
    try:
        _, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    seen: list[str] = []
    for line in err.splitlines():
        if "ERROR:" in line and re.search(r"vulkan|egl|gl_|angle|gpu", line, re.I):
            msg = line.split("] ", 1)[-1].strip()
            if msg not in seen:
                seen.append(msg)
    return seen[:4]


async def probe_gl_paths(playwright, chromium: str | None, base_args: list[str], explain: bool = False) -> list[GLPath]:
    """Every flag set's outcome, in GPU_FLAG_SETS order."""
    return [await probe_one(playwright, chromium, base_args, n, flags, explain=explain)
            for n, flags in GPU_FLAG_SETS.items()]


_chosen: dict[tuple, GLPath] = {}  # one probe per process and browser binary


async def choose_gl_path(mode: str, playwright, chromium: str | None, base_args: list[str],
                         binary: str | None = None, only: str = "") -> GLPath:
    """The path a Renderer launches its browsers on, per RenderConfig.gpu and RenderConfig.gl (`only`:
    that GPU flag set or none). `chromium` is what is launched (the isolation wrapper, say), `binary`
    the Chromium build itself."""
    from salon.pool.errors import SetupError

    if mode == "off":
        return swiftshader_path()
    key = (mode, chromium, only)
    if key in _chosen:
        return _chosen[key]
    if not nvidia_present():
        if mode == "on":
            raise SetupError("render.gpu=on, but this host has no NVIDIA device (/dev/nvidiactl): "
                             "use gpu=auto to fall back to SwiftShader, or run on the GPU node")
        log.info("render: no NVIDIA device here, WebGL on SwiftShader")
        _chosen[key] = swiftshader_path()
        return _chosen[key]
    tried = []
    for name in [only] if only else GPU_FLAG_SETS:  # the first that draws; the later ones are not started
        path = await probe_one(playwright, chromium, base_args, name, GPU_FLAG_SETS[name], explain=mode == "on")
        if not path.error:
            log.info("render: WebGL on the GPU via %s (%s)", path.name, path.renderer)
            _chosen[key] = path
            return path
        tried.append(f"{path.name}: {path.error}")
    if mode == "on":
        missing = await asyncio.to_thread(missing_for_gpu, binary or chromium)
        raise SetupError("render.gpu=on, but Chromium could not draw WebGL on the GPU. "
                         + ("Missing: " + "; ".join(missing) + ". " if missing else "")
                         + "Tried " + "; ".join(tried) + ". `python -m salon.curate.sandbox.gpu` shows each attempt")
    log.warning("render: GPU path unavailable (%s); WebGL on SwiftShader. `python -m salon.curate.sandbox.gpu` "
                "shows the GPU process's errors", "; ".join(tried))
    _chosen[key] = swiftshader_path()
    return _chosen[key]


def main(argv: list[str] | None = None) -> int:
    from playwright.async_api import async_playwright

    from salon.curate.sandbox.chromium import BASE_CHROMIUM_ARGS, find_chromium

    ap = argparse.ArgumentParser(prog="python -m salon.curate.sandbox.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--chromium", default="", help="Chromium binary (default $SALON_CHROMIUM, then PATH)")
    ap.add_argument("--json", action="store_true", help="one JSON object per flag set")
    args = ap.parse_args(argv)

    chromium = find_chromium(args.chromium)
    missing = missing_for_gpu(chromium)

    async def run():
        async with async_playwright() as pw:
            return await probe_gl_paths(pw, chromium, BASE_CHROMIUM_ARGS, explain=True)

    paths = asyncio.run(run())
    icd = find_nvidia_icd()
    if args.json:
        print(json.dumps({"nvidia_icd": icd, "missing": missing}))
    else:
        print(f"NVIDIA Vulkan ICD: {icd or 'none found'}")
        for m in missing:
            print(f"missing: {m}")
    for p in paths:
        if args.json:
            print(json.dumps({**asdict(p), "works": not p.error}))
        else:
            print(f"{p.name:14s} {'works' if not p.error else 'fails'}  {p.renderer or p.error}")
    return 0 if any(not p.error for p in paths) else 1


if __name__ == "__main__":
    sys.exit(main())
