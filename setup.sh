#!/usr/bin/env bash
# Set up salon on a Debian machine (run as root on a fresh one); safe and fast to run again.
#
#   ./setup.sh          Chromium, the pinned npm assets, .venv with salon (curation: no torch)
#   ./setup.sh --dev    the same plus every extra the test suite needs (torch, transformers, trl)
#
# Each step checks before it works: a second run installs nothing and takes seconds. The first run
# takes minutes, most of them pip's: each phase says what it does, how long it usually takes on a
# fresh 2-core machine, and how long it took.
set -euo pipefail
cd "$(dirname "$0")"

extras="hub,curate,app"
if [ "${1:-}" = "--dev" ]; then extras="hub,curate,app,judge,train,dev"; fi
# The judge extra needs torch; these pins install from the wheels this machine kind keeps on
# disk (no multi-GB download). Override with SALON_TORCH="torch==X torchvision==Y".
torch_pins=${SALON_TORCH:-"torch==2.14.1 torchvision==0.29.1"}

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
phase_start=0
phase() { say "$*"; phase_start=$SECONDS; }                       # a phase that takes a while: what, and how long usually
took() { say "  done in $(( SECONDS - phase_start )) s"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=""
need_apt() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# 1. A Chromium: $SALON_CHROMIUM, one on PATH, or Debian's package.
if [ -z "${SALON_CHROMIUM:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  phase "apt-get install chromium (about 1-2 minutes)"; need_apt chromium; took
fi
# The text check's OCR (rapidocr-onnxruntime) loads OpenCV, which needs libGL and GLib.
ldconfig -p 2>/dev/null | grep 'libGL.so.1 ' >/dev/null || { say "installing libgl1 (OpenCV, for the OCR text check)"; need_apt libgl1 libglib2.0-0; }
command -v python3 >/dev/null || { say "installing python3"; need_apt python3 python3-venv python3-pip; }
python3 -c 'import venv, ensurepip' 2>/dev/null || { say "installing python3-venv"; need_apt python3-venv; }
command -v npm >/dev/null || { say "installing nodejs and npm"; need_apt nodejs npm; }

# 2. p5 and p5.brush, exactly as package-lock.json pins them.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  phase "npm ci: p5 and p5.brush (about 10 s)"; npm ci --no-audit --no-fund --loglevel=error; took
fi

# 3. The Python package in .venv, reinstalled only when pyproject.toml or the extras change.
[ -x .venv/bin/python ] || { say "creating .venv"; python3 -m venv .venv; }
stamp=".venv/.salon-setup"
want="$extras|$torch_pins|$(sha256sum pyproject.toml | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  pins=""; how_long="3-6 minutes"
  case ",$extras," in *,judge,*) pins="$torch_pins"; how_long="4-8 minutes: torch, transformers, trl";; esac
  phase "pip install -e .[$extras] (usually $how_long; pip lists what it installs)"
  # not -q: this is the longest phase, and pip's own lines show it moving; the heartbeat covers the
  # minute or so pip sits on "Installing collected packages" without a word
  ( while sleep 60; do say "  pip still working ($(( SECONDS - phase_start )) s)"; done ) &
  heartbeat=$!
  # shellcheck disable=SC2086
  .venv/bin/python -m pip install --disable-pip-version-check -e ".[$extras]" $pins || {
    kill "$heartbeat"; say "pip install failed: its messages are above"; exit 1; }
  kill "$heartbeat"
  took
  echo "$want" > "$stamp"
fi
say "ready: $(.venv/bin/salon --version), chromium $(command -v chromium || echo "${SALON_CHROMIUM:-playwright-managed}")"
