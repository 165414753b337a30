"""Another commit of this repository beside the working tree, for benchmarks that measure against it."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHECKOUTS = REPO / "bench" / "results" / "scratch" / "checkouts"


def checkout_lib(commit: str) -> Path:
    """``commit`` checked out by ``git worktree`` under the scratch folder, once; its ``lib``, to import
    through PYTHONPATH. The checkout's ``.cache/jars`` is this one's, where a session of its code looks for
    Delta's jars."""
    checkout = CHECKOUTS / commit
    if not checkout.is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(checkout), commit], check=True, cwd=REPO)
    jars = checkout / ".cache" / "jars"
    if not jars.exists():
        jars.parent.mkdir(parents=True, exist_ok=True)
        jars.symlink_to(REPO / ".cache" / "jars")
    return checkout / "lib"
