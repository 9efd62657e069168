"""PraisonAI's checkpoint example (``basic_checkpoints.py``, kept as it is) on the drop-in."""

import os
import subprocess
import sys

from praisonaiagents.checkpoints import CheckpointService
from praisonaiagents.checkpoints.service import CheckpointService as ServiceFromService
from praisonaiagents.checkpoints.types import Checkpoint

import snap_undo.checkpoints
from praisonai_swap import SWAPPED

HERE = os.path.dirname(os.path.abspath(__file__))


def test_praisonai_s_imports_give_the_drop_in():
    """What PraisonAI's files here import is snap_undo's, not PraisonAI's own."""
    assert CheckpointService is ServiceFromService is snap_undo.checkpoints.CheckpointService
    assert Checkpoint is snap_undo.checkpoints.Checkpoint
    assert hasattr(Checkpoint, "from_snapshot")  # PraisonAI's has no such method
    for theirs, ours in SWAPPED.items():
        assert sys.modules[theirs] is sys.modules[ours]
    assert set(SWAPPED) == {
        "praisonaiagents.checkpoints",
        "praisonaiagents.checkpoints.service",
        "praisonaiagents.checkpoints.types",
    }


def test_praisonai_s_example_runs_on_the_drop_in(tmp_path):
    """The example as a PraisonAI user runs it, the import swapped: it initializes, saves
    "Initial state" (which must record the file: the initial checkpoint is empty), saves
    again, lists, diffs, and restores over unsaved changes."""
    env = dict(os.environ)
    # The example keeps its checkpoints under ~/.praisonai; no telemetry from its Agent.
    env.update(HOME=str(tmp_path), PRAISONAI_TELEMETRY_DISABLED="true", DO_NOT_TRACK="1")
    env.pop("SNAP_STORE", None)
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "praisonai_swap.py"),
         os.path.join(HERE, "basic_checkpoints.py")],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "Demo Complete!" in text and "Error" not in text, text
    listed = text.split("--- Listing All Checkpoints ---")[1].split("---")[0]
    assert [line.split("] ", 1)[1] for line in listed.strip().splitlines()] == [
        "Added features", "Initial state", "Initial checkpoint",
    ], listed
    restored = text.split("--- Verified Content After Restore ---")[1]
    assert "# Refactored content\nprint('Hello, PraisonAI!')" in restored, restored
    # Its checkpoints went where PraisonAI keeps them, as a snap store.
    stores = tmp_path / ".praisonai" / "checkpoints"
    assert [p for p in stores.iterdir() if (p / "packs").is_dir()], list(stores.iterdir())
