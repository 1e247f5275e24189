"""Publishing a rollout archive through the real huggingface_hub client (fake Hub on 127.0.0.1).

The client runs in a subprocess because huggingface_hub reads HF_ENDPOINT when imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from hubserver import serve
from train_support import write_synthetic_run

PUSH_AND_FETCH = textwrap.dedent("""
    import json, sys
    from huggingface_hub import snapshot_download
    from salon.train.record.archive import push_rollouts
    run_dir, repo, dest = sys.argv[1:4]
    revision = push_rollouts(run_dir, repo, message="rollouts of a synthetic run")
    local = snapshot_download(repo, repo_type="dataset", revision=revision, local_dir=dest)
    print(json.dumps({"revision": revision, "local": local}))
""")


def test_rollout_archive_round_trips_through_the_hub(tmp_path):
    run_dir = write_synthetic_run(tmp_path / "run", collapse=False, steps=3)
    with serve() as (url, server):
        env = dict(os.environ, HF_ENDPOINT=url, HF_HUB_DISABLE_XET="1", HF_TOKEN="test-token",
                   HF_HOME=str(tmp_path / "hf-home"))
        env.pop("HF_HUB_OFFLINE", None)
        proc = subprocess.run([sys.executable, "-c", PUSH_AND_FETCH, str(run_dir), "me/rollouts",
                               str(tmp_path / "fetched")], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        pushed = json.loads(proc.stdout.strip().splitlines()[-1])
        assert len(pushed["revision"]) == 40
        assert ("dataset", "me/rollouts") in server.repos

    from salon.train.record.archive import load_rollouts_dataset

    fetched = load_rollouts_dataset(pushed["local"])
    assert fetched.num_rows == 3 * 2 * 4
    assert {"reward_gate", "reward_length", "reward_judge", "reward", "step", "image"} <= set(fetched.column_names)
    passed = [r for r in fetched if r["gate_passed"]]
    assert passed and all(r["image"] is not None and r["reward_judge"] is not None for r in passed)
