"""What a command prints as data: with `--json`, stdout carries only the JSON.

    with json_mode(args.json):      # salon.apps.cli wraps every command in this
        emit({"id": ...})           # one JSON document, or one JSON line per call where documented

While a `--json` command runs, everything else that would reach stdout goes to stderr: Python
prints of libraries (TRL's per-step dicts, progress bars), and writes to file descriptor 1 by C
code or child processes (tokenizers, render workers, Chromium). `emit` writes to the stdout the
command started with. Without `--json` it is a plain print.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager

_data_stream = None  # the real stdout while a --json command runs


@contextmanager
def json_mode(enabled: bool):
    global _data_stream
    if not enabled:
        yield
        return
    stdout = sys.stdout
    stdout.flush()
    try:
        on_fd1 = stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):  # a captured stream (pytest's capsys): keep it
        on_fd1 = False
    saved = os.dup(1)
    os.dup2(2, 1)  # children and C code that write to fd 1 reach stderr now
    _data_stream = open(os.dup(saved), "w", encoding="utf-8", buffering=1) if on_fd1 else stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stderr.flush()
        _data_stream.flush()
        if on_fd1:
            _data_stream.close()
        os.dup2(saved, 1)
        os.close(saved)
        sys.stdout, _data_stream = stdout, None


def emit(obj, **dumps_kwargs) -> None:
    """Print `obj` as one line (or `indent=`-formatted document) of JSON on the data stdout."""
    stream = _data_stream or sys.stdout
    stream.write(json.dumps(obj, **dumps_kwargs) + "\n")
    stream.flush()
