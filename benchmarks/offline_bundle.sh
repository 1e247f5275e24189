#!/usr/bin/env bash
# Pack what benchmarks/bench_train_gpu.py needs for a GPU node without network, in parts of <= 45 MiB
# (a part travels beside the checkout, 4-5 MB, in one carry of at most 64 MiB; 60 MiB parts no longer fit).
#
#   benchmarks/offline_bundle.sh OUTDIR     # OUTDIR/bundle.tar.zst, OUTDIR/chunks/{part-NN,zstandard-*.whl}, OUTDIR/unpack.sh
#   . unpack.sh CHUNKDIR DEST               # on the node, in the salon checkout, once every file of chunks/ is in CHUNKDIR
#
# It says what it does: a line a phase with sizes and times, and one every 30 s while it compresses.
# Measured on this project's machine (2 cores, busy: load 9-13), 856 MiB to pack: `zstd -6 --long=27
# -T0` makes 265 MiB (5 parts) in 39 s (15 s of CPU), the whole script 2.5-2.8 minutes; `xz -6 -T0`
# made 220 MiB (4 parts) in 21 minutes (about 560 s of CPU), and the `xz -9e -T0` it ran before takes
# 35 % more CPU than that (a 64 MiB sample: 57 s against 42): the 18 minutes without a word, unfinished.
# Also measured: zstd -3 --long=27 281 MiB in 16 s, -10 251 MiB in 132 s; xz -1 253 MiB in 347 s.
# The node unpacks with its zstd, or else with python and the zstandard wheel beside the parts.
#
# The bundle holds Debian bookworm's chromium and the closure of its Depends (first alternative,
# a virtual package's provider), less what the node has or must keep: libc6, libgcc-s1, libstdc++6,
# Priority: required and Essential packages; with fonts and the GL/Vulkan loaders NVIDIA's driver
# needs (not Mesa's DRI drivers: the driver is the ICD). Each deb is `dpkg -x`ed into root/, nothing
# is installed here. Then node_modules, and the cp312 wheels of what the node lacks or has too old,
# pinned to .venv. Needs apt lists and python3-apt, and ./setup.sh --dev done (.venv, node_modules).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:?usage: benchmarks/offline_bundle.sh OUTDIR}" && cd "$1" && pwd)
stage=$out/stage
pip=("$repo/.venv/bin/python" -m pip)
say() { printf '\033[1mbundle:\033[0m %s\n' "$*"; }
phase_start=$SECONDS
ended() { say "$* ($((SECONDS - phase_start)) s)"; phase_start=$SECONDS; }  # a phase's last line, with its time
mib() { du -scm "$@" 2>/dev/null | tail -1 | cut -f1; }  # MiB on disk, of every path given
rm -rf "$stage" "$out/chunks" && mkdir -p "$stage"/{debs,root,bin,wheels/fallback,wheels/tools} "$out/chunks"

# 1. Chromium's closure, resolved by apt itself (apt-cache depends --recurse lists every alternative).
say "1/4 debs: resolving chromium's closure with apt"
apt-cache policy chromium | grep -q 'Candidate: [0-9]' || apt-get update -qq
/usr/bin/python3 - chromium fonts-liberation fonts-dejavu-core fontconfig-config \
    libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 > "$stage/debs.txt" <<'PY'
import sys, apt_pkg
apt_pkg.init()
cache = apt_pkg.Cache(None)
dep = apt_pkg.DepCache(cache)
skip = {"libc6", "libgcc-s1", "libstdc++6", "libgl1-mesa-dri"}  # Mesa's DRI: the node's driver is the ICD
def present(p):  # what the node has, or must not be replaced
    v = dep.get_candidate_ver(p)
    return p.name in skip or p.essential or (v is not None and v.priority == apt_pkg.PRI_REQUIRED)
def concrete(name):  # a virtual package: the provider installed here, else the first
    p = cache[name, "amd64"] if (name, "amd64") in cache else cache[name]
    if dep.get_candidate_ver(p):
        return p
    return sorted((pv[2].parent_pkg for pv in p.provides_list), key=lambda q: q.current_ver is None)[0]
chosen, queue = {}, []
def take(p):
    if p.name not in chosen and not present(p):
        chosen[p.name] = dep.get_candidate_ver(p)
        queue.append(p)
for name in sys.argv[1:]:
    take(concrete(name))
while queue:
    v = chosen[queue.pop(0).name]
    for group in v.depends_list.get("PreDepends", []) + v.depends_list.get("Depends", []):
        alts = [concrete(d.target_pkg.name) for d in group]
        if not any(a.name in chosen or present(a) for a in alts):
            take(alts[0])
for name, v in sorted(chosen.items()):
    print(f"{name}={v.ver_str}")
PY
say "1/4 debs: downloading $(wc -l < "$stage/debs.txt") packages"
(cd "$stage/debs" && xargs -a ../debs.txt apt-get download -qq 2>&1 | grep -v 'unsandboxed' || true)
say "1/4 debs: $(mib "$stage"/debs/*.deb) MiB of .deb downloaded; extracting"
for deb in "$stage"/debs/*.deb; do dpkg -x "$deb" "$stage/root"; done
[ "$(ls "$stage"/debs/*.deb | wc -l)" = "$(wc -l < "$stage/debs.txt")" ] || { echo "a deb did not download" >&2; exit 1; }
# Headless needs none of these (strip nothing else)
find "$stage/root/usr/lib/chromium/locales" -type f ! -name 'en-US.pak' -delete
rm -rf "$stage"/root/usr/share/{doc,man,info,locale,icons}

# Chromium with the bundle's libraries for itself alone: exported for the whole shell they would
# shadow the node's own (its python's libssl, libsqlite3, libexpat) with bookworm's.
libdirs=$(cd "$stage/root" && find . -name 'lib*.so*' ! -path './usr/lib/chromium/*' -printf '%h\n' \
          | grep -Ev 'systemd|security|plugins|modules|engines|immodules|printbackends|loaders|cryptsetup' \
          | sort -u | sed 's|^\./||' | tr '\n' ' ')
{
  echo '#!/bin/sh'
  echo '# bookworm chromium on the libraries bundled beside it (offline_bundle.sh); not the /usr/bin wrapper'
  echo 'root=$(dirname "$(dirname "$(readlink -f "$0")")")/root'
  printf 'LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$root/usr/lib/chromium/chromium" "$@"\n' \
    "$(for d in $libdirs; do printf '$root/%s:' "$d"; done | sed 's/:$//')"
} > "$stage/bin/chromium"
chmod 755 "$stage/bin/chromium"
printf '%s\n' $libdirs > "$stage/libdirs.txt"
ended "1/4 debs: $(ls "$stage"/debs/*.deb | wc -l) packages, $(mib "$stage/root") MiB in root/"

# 2. The wheels, as .venv pins them: what the recipe, the sandbox and the judges import that the node
# lacks or has older (trackio and gradio only load where installed; bench_train_gpu sets report_to []).
carry="trl datasets dill multiprocess transformers huggingface_hub httpx2 httpcore2 truststore playwright greenlet
       ImageHash PyWavelets rapidocr-onnxruntime pyclipper shapely six tree-sitter tree-sitter-javascript"
say "2/4 wheels: downloading the cp312 wheels of $(echo $carry | wc -w) packages as .venv pins them, then what they need"
freeze=$("${pip[@]}" freeze 2>/dev/null)
pin() { grep -i "^$(echo "$1" | sed 's/[-_.]/[-_.]/g')==" <<< "$freeze" || { echo "$1 is not in .venv" >&2; exit 1; }; }
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
for n in $(seq 29 39); do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
download() {  # DIR SPEC...: cp312 x86-64 wheels, no resolution (the node's own packages stay)
  local dir=$1; shift
  "${pip[@]}" download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$dir" "$@" 2> >(grep -v 'is ignored' >&2)
}
specs=(); for p in $carry; do spec=$(pin "$p"); specs+=("$spec"); done
download "$stage/wheels" "${specs[@]}"
# Each carried wheel's requirements on what it expects the node to have: the node's version is checked at
# unpack time, and .venv's is installed where it falls short. Not the big ones of the CUDA image.
"$repo/.venv/bin/python" - "$stage/wheels" > "$stage/wheels/fallback/needs.txt" <<'PY'
import re, sys, zipfile, pathlib
from pip._vendor.packaging.requirements import Requirement
canon = lambda s: re.sub(r"[-_.]+", "-", s).lower()
never = {"torch", "torchvision", "triton", "numpy", "pandas", "pyarrow", "scipy", "pillow", "matplotlib",
         "onnxruntime", "opencv-python", "opencv-python-headless"}
node = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
        "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
        "platform_python_implementation": "CPython", "os_name": "posix", "extra": ""}
wheels = sorted(pathlib.Path(sys.argv[1]).glob("*.whl"))
carried = {canon(w.name.split("-")[0]) for w in wheels}
needs = {}
for w in wheels:
    meta = next(n for n in zipfile.ZipFile(w).namelist() if n.endswith(".dist-info/METADATA"))
    for line in zipfile.ZipFile(w).read(meta).decode().splitlines():
        if line.startswith("Requires-Dist:"):
            r = Requirement(line.split(":", 1)[1].strip())
            name = canon(r.name)
            if (r.marker is None or r.marker.evaluate(node)) and name not in carried | never \
                    and not name.startswith(("nvidia-", "cuda-")):
                needs.setdefault(name, set()).add(str(r.specifier))
for name, specs in sorted(needs.items()):
    print(name, *sorted(s for s in specs if s) or ["*"])
PY
specs=(); for p in $(cut -d' ' -f1 "$stage/wheels/fallback/needs.txt"); do spec=$(pin "$p"); specs+=("$spec"); done
download "$stage/wheels/fallback" "${specs[@]}"
# pip itself, for a python without it, and wheel, for setuptools older than 70.1 building salon -e
download "$stage/wheels/tools" pip wheel
say "2/4 wheels: $(ls "$stage"/wheels/*.whl "$stage"/wheels/*/*.whl | wc -l) wheels, $(mib "$stage/wheels") MiB; storing them uncompressed"
# Stored, not deflated, so the compressor sees their bytes (playwright's: 53 MB deflated, 35 MB in an xz). Same files.
"$repo/.venv/bin/python" - "$stage"/wheels/*.whl "$stage"/wheels/*/*.whl <<'PY'
import os, sys, zipfile
for path in sys.argv[1:]:
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            info.compress_type = zipfile.ZIP_STORED
            dst.writestr(info, data)
    os.replace(path + ".tmp", path)
PY

ended "2/4 wheels: $(mib "$stage/wheels") MiB stored"

# 3. The tarball (node_modules straight from the checkout) and its parts: zstd on every core, with a
# 128 MiB window (--long=27, what every zstd decoder takes by default). Not xz: see the header.
[ -f "$repo/node_modules/p5/lib/p5.min.js" ] || { echo "no node_modules: run ./setup.sh first" >&2; exit 1; }
input=$(mib "$stage"/{bin,root,wheels} "$repo/node_modules")
say "3/4 zstd -6 --long=27 -T0: packing ${input} MiB (Chromium's root, the wheels, node_modules) on $(nproc) cores"
(while sleep 30; do say "3/4 zstd: $(mib "$out/bundle.tar.zst") MiB written so far"; done) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null || true' EXIT
rm -f "$out/bundle.tar.xz"  # an earlier bundle's
tar -C "$stage" --owner=0 --group=0 -cf - bin root wheels libdirs.txt -C "$repo" node_modules \
  | zstd -q -6 --long=27 -T0 -o "$out/bundle.tar.zst" -f
kill "$ticker" 2>/dev/null || true
ended "3/4 zstd: ${input} MiB -> $(mib "$out/bundle.tar.zst") MiB"
# the zstandard wheel for a node without a zstd command: beside the parts, checked with them
download "$out/chunks" zstandard==0.25.0
(cd "$out/chunks" && split -b 45M -d "$out/bundle.tar.zst" part- && sha256sum part-* zstandard-*.whl) > "$stage/sums.txt"
say "4/4 parts: $(ls "$out/chunks"/part-* | wc -l) of at most 45 MiB and the zstandard wheel; writing unpack.sh"

# 4. unpack.sh: the parts' checksums, then the part that runs on the node.
{
  echo '# . unpack.sh CHUNKDIR DEST: on the GPU node, sourced from the salon checkout (offline_bundle.sh made it).'
  echo '# Checks the parts and extracts them into DEST once, installs the wheels into DEST/site once, puts the'
  echo '# fonts and the GL/Vulkan loaders where fontconfig and the NVIDIA driver look (not with BUNDLE_NO_SYSTEM=1),'
  echo '# exports PYTHONPATH, SALON_CHROMIUM (a wrapper: chromium on the bundled libraries, which'
  echo '# SALON_BUNDLE_LIBS lists; BUNDLE_EXPORT_LD=1 also exports them as LD_LIBRARY_PATH), the Vulkan/EGL driver'
  echo '# files, links node_modules here and installs salon -e. No exit, no set -e: safe to source again. It unpacks'
  echo '# with the node'"'"'s zstd, else (or with BUNDLE_NO_ZSTD=1) python and the zstandard wheel beside the parts.'
  printf "_ob_sums='%s'\n" "$(cat "$stage/sums.txt")"
  cat <<'SH'
_ob_unpack() {
  local chunks=$1 dest=$2 py=${BUNDLE_PYTHON:-python3} parts f pipwhl piped
  if [ -z "$chunks" ] || [ -z "$dest" ]; then echo "usage: . unpack.sh CHUNKDIR DEST" >&2; return 2; fi
  dest=$(mkdir -p "$dest" && cd "$dest" && pwd) || return 1
  # .extracted holds the parts' checksums: another bundle replaces this one
  if [ "$(cat "$dest/.extracted" 2>/dev/null)" != "$_ob_sums" ]; then
    (cd "$chunks" && printf '%s\n' "$_ob_sums" | sha256sum -c --quiet) || {
      echo "unpack: a part in $chunks is missing or damaged (above)" >&2; return 1; }
    parts=$(printf '%s\n' "$_ob_sums" | awk -v d="$chunks" '$2 ~ /^part-/ {print d "/" $2}')
    echo "unpack: extracting into $dest"
    rm -rf "$dest"/{bin,root,site,wheels,node_modules,libdirs.txt,.site,.extracted}
    # the node's zstd, else python with the zstandard wheel beside the parts, unzipped (BUNDLE_NO_ZSTD=1: always)
    if command -v zstd >/dev/null && [ "${BUNDLE_NO_ZSTD:-0}" != 1 ]; then
      cat $parts | zstd -dcq --long=27 | tar -x -C "$dest"
      piped="${PIPESTATUS[*]}"
    else
      f=$(mktemp -d) && "$py" -m zipfile -e "$(ls "$chunks"/zstandard-*.whl)" "$f" || return 1
      cat $parts | PYTHONPATH="$f${PYTHONPATH:+:$PYTHONPATH}" "$py" -c 'import shutil, sys, zstandard
shutil.copyfileobj(zstandard.ZstdDecompressor().stream_reader(sys.stdin.buffer, read_across_frames=True), sys.stdout.buffer, 1 << 20)' \
        | tar -x -C "$dest"
      piped="${PIPESTATUS[*]}"
      rm -rf "$f"
    fi
    case "$piped" in "0 0 0") ;; *) echo "unpack: extraction failed" >&2; return 1;; esac
    printf '%s\n' "$_ob_sums" > "$dest/.extracted"
  fi
  pipwhl=$(ls "$dest"/wheels/tools/pip-*.whl)
  if [ ! -f "$dest/.site" ]; then
    # pip from its own wheel where the node's python has none
    if "$py" -m pip --version >/dev/null 2>&1; then set -- "$py" -m pip; else set -- "$py" "$pipwhl/pip"; fi
    # .venv's version of a requirement the node meets too old or not at all (wheels/fallback/needs.txt)
    local extra
    extra=$("$py" - "$dest/wheels/fallback" "$pipwhl" <<'PY'
import re, sys, pathlib, importlib.metadata as md
sys.path.insert(0, sys.argv[2])
from pip._vendor.packaging.specifiers import SpecifierSet
folder = pathlib.Path(sys.argv[1])
for line in (folder / "needs.txt").read_text().splitlines():
    name, *specs = line.split()
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        have = None
    if have is None or not all(SpecifierSet("" if s == "*" else s).contains(have, prereleases=True) for s in specs):
        wheel = next(w for w in folder.glob("*.whl") if re.sub(r"[-_.]+", "-", w.name.split("-")[0]).lower() == name)
        print(wheel)
        print(f"unpack: {name} {have or 'missing'}, wanted {' '.join(specs)}: installing {wheel.name}", file=sys.stderr)
PY
) || return 1
    rm -rf "$dest/site"
    "$@" install -q --no-index --no-deps --no-compile --no-cache-dir --disable-pip-version-check \
      --target "$dest/site" "$dest"/wheels/*.whl $extra || return 1
    touch "$dest/.site"
  fi
  if [ "${BUNDLE_NO_SYSTEM:-0}" != 1 ]; then
    # fontconfig reads its compiled-in paths; NVIDIA's driver libraries need libGLdispatch at system paths
    # (each step || true: a caller's set -e must not end its shell here; what fails shows at the end)
    { mkdir -p /usr/share/fonts && cp -rn "$dest/root/usr/share/fonts/." /usr/share/fonts/; } 2>/dev/null || true
    [ -e /etc/fonts/fonts.conf ] || { mkdir -p /etc/fonts && cp -a "$dest/root/etc/fonts/." /etc/fonts/; } || true
    [ -d /usr/share/fontconfig ] || cp -a "$dest/root/usr/share/fontconfig" /usr/share/ || true
    for f in "$dest"/root/usr/lib/x86_64-linux-gnu/{libvulkan.so.1,libEGL.so,libGLdispatch.so,libOpenGL.so,libGL.so,libGLX.so,libGLESv2.so}*; do
      [ -e "/usr/lib/x86_64-linux-gnu/${f##*/}" ] || cp -a "$f" /usr/lib/x86_64-linux-gnu/ || true
    done
    ldconfig || echo "unpack: ldconfig failed" >&2
  fi
  case ":${PYTHONPATH:-}:" in *":$dest/site:"*) ;; *) export PYTHONPATH="$dest/site${PYTHONPATH:+:$PYTHONPATH}";; esac
  export SALON_CHROMIUM="$dest/bin/chromium" SALON_NODE_MODULES="$dest/node_modules"
  SALON_BUNDLE_LIBS=$(sed "s|^|$dest/root/|" "$dest/libdirs.txt" | paste -sd:); export SALON_BUNDLE_LIBS
  if [ "${BUNDLE_EXPORT_LD:-0}" = 1 ]; then
    case ":${LD_LIBRARY_PATH:-}:" in *":$SALON_BUNDLE_LIBS:"*) ;; *) export LD_LIBRARY_PATH="$SALON_BUNDLE_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}";; esac
  fi
  f=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; if [ -f "$f" ]; then export VK_DRIVER_FILES=$f; fi
  f=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json; if [ -f "$f" ]; then export __EGL_VENDOR_LIBRARY_FILENAMES=$f; fi
  if [ -f pyproject.toml ] && grep -q '^name = "salon"' pyproject.toml; then
    [ -e node_modules ] || ln -s "$dest/node_modules" node_modules
    if ! "$py" -c "import salon.train" 2>/dev/null; then
      if "$py" -m pip --version >/dev/null 2>&1; then set -- "$py" -m pip; else set -- "$py" "$pipwhl/pip"; fi
      # salon maps salon.curate -> curate/ and so on: only an install makes the names; wheel: old setuptools
      PYTHONPATH="$(ls "$dest"/wheels/tools/wheel-*.whl):$PYTHONPATH" \
        "$@" install -q --no-index --no-deps --no-build-isolation --disable-pip-version-check -e . || return 1
    fi
  else
    echo "unpack: not in the salon checkout: node_modules not linked, salon not installed" >&2
  fi
  echo "unpack: $("$SALON_CHROMIUM" --version 2>&1 | tail -1); $("$py" -c 'from importlib.metadata import version as v
import trl, datasets, transformers, playwright
print(", ".join(f"{n} {v(n)}" for n in ("trl", "datasets", "transformers", "huggingface_hub", "playwright")))' 2>&1 | tail -1)"
}
_ob_unpack "$@"
_ob_rc=$?
unset -f _ob_unpack
unset _ob_sums
return "$_ob_rc"
SH
} > "$out/unpack.sh"
rm -rf "$stage"
say "$(ls "$out/chunks"/part-* | wc -l) parts, $(du -h "$out/bundle.tar.zst" | cut -f1) in all: $out/chunks, $out/unpack.sh ($SECONDS s in all)"
