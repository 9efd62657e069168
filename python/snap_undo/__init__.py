"""snap-undo: undo and redo for any directory, from Python.

``pip install snap-undo`` installs the ``snap-undo`` binary and this package, a typed wrapper
over its ``--json`` documents (docs/JSON.md)::

    from snap_undo import Workspace

    ws = Workspace.init("/path/to/project")   # a new store saves a baseline first
    # ... edit files ...
    ws.save("after edit", step=3, session="chat-1")
    result = ws.undo()            # back to the baseline: a MoveResult (NothingToDo: exit code 3)

``AsyncWorkspace`` has the same methods as coroutines. ``snap_undo.checkpoints`` is a drop-in
for ``praisonaiagents.checkpoints``. ``python -m snap_undo ARGS`` runs the binary.
"""

from ._bin import find_bin
from ._types import (
    Change,
    Diff,
    FileContent,
    FileDiff,
    Log,
    MoveResult,
    SaveResult,
    Skipped,
    Snapshot,
    Stats,
    Status,
    TooLarge,
    Unreadable,
    Verify,
)
from ._workspace import AsyncWorkspace, NothingToDo, SnapError, Workspace

__all__ = [
    "AsyncWorkspace",
    "Change",
    "Diff",
    "FileContent",
    "FileDiff",
    "Log",
    "MoveResult",
    "NothingToDo",
    "SaveResult",
    "Skipped",
    "SnapError",
    "Snapshot",
    "Stats",
    "Status",
    "TooLarge",
    "Unreadable",
    "Verify",
    "Workspace",
    "find_bin",
]
