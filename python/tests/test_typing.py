"""Type checkers see snap_undo's types: ``mypy --strict`` passes on a small typed use of the
package (the installed wheel, through its ``py.typed`` marker), and what a call returns is
its dataclass, not ``Any``."""

import os
import subprocess
import sys
import textwrap

import pytest

EXAMPLE = textwrap.dedent(
    '''
    from datetime import datetime
    from typing import List

    from snap_undo import AsyncWorkspace, NothingToDo, Skipped, Snapshot, Status, Workspace
    from snap_undo.checkpoints import CheckpointResult, CheckpointService


    def use(path: str) -> datetime:
        ws = Workspace.init(path)
        ws.save("edit", step=1)
        status: Status = ws.status()
        skipped: Skipped = status.skipped
        unreadable: List[str] = [u.path for u in skipped.skipped_unreadable]
        moved = ws.undo()
        if isinstance(moved, NothingToDo):
            print(moved.reason, unreadable)
        else:
            kept: List[str] = moved.kept
            print(kept)
        snapshot: Snapshot = ws.show()
        return snapshot.time


    async def use_async(path: str) -> CheckpointResult:
        ws = await AsyncWorkspace.init(path)
        await ws.save()
        service = CheckpointService(workspace_dir=path)
        await service.initialize()
        return await service.save("Before refactoring")


    reveal_type(Workspace("/").status())
    '''
)


def _mypy_or_skip() -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        if os.environ.get("SNAP_UNDO_REQUIRE_WHEEL"):
            pytest.fail("mypy is not installed (.ci/run installs it)")
        pytest.skip("mypy is not installed")


def test_mypy_strict_passes_on_typed_use(tmp_path):
    _mypy_or_skip()
    example = tmp_path / "example.py"
    example.write_text(EXAMPLE)
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(example)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    said = out.stdout + out.stderr
    assert 'Revealed type is "snap_undo._types.Status"' in said, said
    errors = [line for line in said.splitlines() if ": error:" in line]
    assert errors == [], said


def test_time_is_a_datetime_and_skipped_is_typed(workspace):
    from datetime import datetime, timezone

    import snap_undo

    ws = snap_undo.Workspace.init(workspace)
    (workspace / "a.txt").write_text("one\n")
    saved = ws.save("first")
    assert isinstance(saved.skipped, snap_undo.Skipped)
    assert saved.snapshot is not None
    when = saved.snapshot.time
    assert isinstance(when, datetime) and when.tzinfo == timezone.utc
    assert abs(when.timestamp() - saved.snapshot.time_ns / 1e9) < 1e-3
