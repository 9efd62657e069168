"""``CheckpointService`` with the constructor, methods, properties and events of
``praisonaiagents.checkpoints.service.CheckpointService``, over a snap store.

Where PraisonAI's behaviour can lose data, snap's wins: its restore runs ``git reset
--hard`` (a file over its size cap, or one its excludes hide, is lost); here a restore is an
undo back to the checkpoint when it is on the current line (redo can return), else snap's
restore (recorded as a new snapshot); both save unsaved work first and never touch ignored
or oversize files. As in PraisonAI, ``initialize()`` records an empty "Initial
checkpoint" in a new store (``snap save --empty-tree``, touching no file, as PraisonAI's
``git commit --allow-empty``), so the first ``save()`` records the workspace; restoring to
it empties the directory as PraisonAI's does, but as an undo that saved the files first
(``redo`` brings them back). ``max_checkpoints`` deletes nothing: PraisonAI trims only its
in-memory list while git keeps every commit, so a rewind past it still works. snap's own
retention (``.snap/config.toml``) is what keeps the store bounded.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
from typing import Any, Callable, Dict, List, Optional

from .._types import MoveResult
from .._workspace import AsyncWorkspace, NothingToDo, SnapError
from .types import (
    Checkpoint,
    CheckpointConfig,
    CheckpointDiff,
    CheckpointEvent,
    CheckpointResult,
    FileDiff,
)

logger = logging.getLogger(__name__)

_STEP_TAG_RE = re.compile(r"^\[step-(\d+)\]\s*")

#: Never checkpointed (the paths themselves; their subdirectories are fine).
PROTECTED_PATHS = [
    os.path.expanduser("~"),
    os.path.expanduser("~/Desktop"),
    os.path.expanduser("~/Documents"),
    os.path.expanduser("~/Downloads"),
    "/",
    "/tmp",
    "/var",
    "/etc",
]

NO_CHANGES = "No changes to checkpoint"

#: The message of the empty checkpoint ``initialize()`` records in a new store, as
#: PraisonAI's.
INITIAL_MESSAGE = "Initial checkpoint"

#: Log entries read beyond ``limit``, for the redo stack above HEAD that the list leaves out.
_REDO_ALLOWANCE = 1000


class CheckpointService:
    """File checkpoints of one workspace, kept by snap in ``storage_dir``."""

    def __init__(
        self,
        workspace_dir: str,
        storage_dir: Optional[str] = None,
        enabled: bool = True,
        auto_checkpoint: bool = True,
        max_checkpoints: int = 100,
        user_name: str = "PraisonAI Checkpoints",
        user_email: str = "checkpoints@praison.ai",
        max_file_size: int = 2 * 1024 * 1024,
    ):
        self.config = CheckpointConfig(
            workspace_dir=workspace_dir,
            storage_dir=storage_dir,
            enabled=enabled,
            auto_checkpoint=auto_checkpoint,
            max_checkpoints=max_checkpoints,
            user_name=user_name,
            user_email=user_email,
            max_file_size=max_file_size,
        )
        self._initialized = False
        self._snap: Optional[AsyncWorkspace] = None
        self._op_lock: Optional[asyncio.Lock] = None
        self._op_lock_loop: Optional[asyncio.AbstractEventLoop] = None
        self._event_handlers: Dict[CheckpointEvent, List[Callable[[Any], None]]] = {
            event: [] for event in CheckpointEvent
        }

    @property
    def workspace_dir(self) -> str:
        """The directory checkpointed."""
        return self.config.workspace_dir

    @property
    def checkpoint_dir(self) -> str:
        """The snap store of this workspace."""
        return self.config.get_checkpoint_dir()

    @property
    def git_dir(self) -> str:
        """Kept for compatibility: the snap store directory (there is no git)."""
        return self.checkpoint_dir

    @property
    def is_initialized(self) -> bool:
        """Whether ``initialize()`` succeeded (and ``cleanup()`` has not run since)."""
        return self._initialized

    def on(self, event: CheckpointEvent, handler: Callable[[Any], None]) -> None:
        """Calls ``handler(data)`` on each ``event``."""
        self._event_handlers[event].append(handler)

    def _emit(self, event: CheckpointEvent, data: Any = None) -> None:
        for handler in self._event_handlers[event]:
            try:
                handler(data)
            except Exception as e:  # a handler's bug must not fail the checkpoint
                logger.warning("Event handler error: %s", e)

    def _get_op_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._op_lock is None or self._op_lock_loop is not loop:
            self._op_lock = asyncio.Lock()
            self._op_lock_loop = loop
        return self._op_lock

    async def initialize(self) -> bool:
        """Creates (or opens) the workspace's store and, in a new one, records the empty
        "Initial checkpoint", as PraisonAI's ``git commit --allow-empty`` does: no file is
        read or touched, and the first ``save()`` records what the workspace holds. False
        when disabled, protected or missing."""
        if not self.config.enabled:
            return False
        real = os.path.realpath(self.config.workspace_dir)
        if any(real == os.path.realpath(p) for p in PROTECTED_PATHS):
            logger.warning("Cannot checkpoint protected path: %s", real)
            return False
        if not os.path.isdir(self.config.workspace_dir):
            logger.error("Workspace does not exist: %s", self.config.workspace_dir)
            return False
        os.makedirs(str(self.config.storage_dir), exist_ok=True)
        snap = AsyncWorkspace(self.config.workspace_dir, store=self.checkpoint_dir)
        try:
            await snap._run(["init"])
            if not (await snap.log(limit=1, all=True)).snapshots:
                await snap._run(["save", "--empty-tree", "-m", INITIAL_MESSAGE])
        except SnapError as e:
            self._emit(CheckpointEvent.ERROR, {"error": e.message})
            return False
        self._snap = snap
        self._initialized = True
        self._emit(CheckpointEvent.INITIALIZED, {"workspace": self.config.workspace_dir})
        return True

    async def save(
        self, message: str, allow_empty: bool = False, step: Optional[int] = None
    ) -> CheckpointResult:
        """Saves a checkpoint; fails with "No changes to checkpoint" when nothing changed
        (unless ``allow_empty``). ``step`` tags it (``[step-N]``) for
        ``restore(step=N)``."""
        if not self._initialized or self._snap is None:
            return CheckpointResult.fail("Service not initialized")
        if step is not None and step < 0:
            return CheckpointResult.fail("step must be a non-negative integer")
        if step is not None:
            message = f"[step-{step}] {_STEP_TAG_RE.sub('', message)}"
        async with self._get_op_lock():
            return await self._save_unlocked(message, allow_empty)

    async def _save_unlocked(self, message: str, allow_empty: bool) -> CheckpointResult:
        assert self._snap is not None
        try:
            step = _extract_step(message)
            saved = await self._snap.save(message, step=step, allow_empty=allow_empty)
            if saved.snapshot is None:
                return CheckpointResult.fail(NO_CHANGES)
            checkpoint = Checkpoint.from_snapshot(saved.snapshot)
            self._emit(CheckpointEvent.CHECKPOINT_CREATED, checkpoint)
            return CheckpointResult.ok(checkpoint)
        except SnapError as e:
            self._emit(CheckpointEvent.ERROR, {"error": e.message})
            return CheckpointResult.fail(e.message)

    async def restore(
        self, checkpoint_id: Optional[str] = None, step: Optional[int] = None
    ) -> CheckpointResult:
        """Makes the workspace match a checkpoint (by id or by ``step``). Unsaved work is
        saved first, so the restore can itself be undone."""
        if not self._initialized or self._snap is None:
            return CheckpointResult.fail("Service not initialized")
        if checkpoint_id is not None and step is not None:
            return CheckpointResult.fail("Provide either checkpoint_id or step, not both")
        if step is not None:
            found = await self.get_checkpoint_by_step(step)
            if found is None:
                return CheckpointResult.fail(f"No checkpoint found for step {step}")
            checkpoint_id = found.id
        if checkpoint_id is None:
            return CheckpointResult.fail("No checkpoint id or step provided")
        async with self._get_op_lock():
            try:
                moved = await self._move_to(checkpoint_id)
            except SnapError as e:
                self._emit(CheckpointEvent.ERROR, {"error": e.message})
                return CheckpointResult.fail(e.message)
        restored = await self._snap.show(checkpoint_id)
        checkpoint = Checkpoint.from_snapshot(restored)
        if moved.auto_saved is not None:
            logger.info("Saved unsaved work as checkpoint %s before restore", moved.auto_saved.id[:8])
        self._emit(CheckpointEvent.CHECKPOINT_RESTORED, checkpoint)
        return CheckpointResult.ok(checkpoint)

    async def _move_to(self, checkpoint_id: str) -> MoveResult:
        """To a checkpoint on the current line: an undo back to it, so the list then
        starts at it (as after PraisonAI's reset) and a redo can return. To any other
        checkpoint: snap's restore, recorded as a new snapshot. Either way unsaved work is
        saved first."""
        assert self._snap is not None
        moved = await self._snap.undo(to=checkpoint_id)
        if isinstance(moved, NothingToDo):
            # Not before HEAD (or HEAD itself with nothing unsaved): restore instead.
            return await self._snap.restore(checkpoint_id)
        return moved

    async def rewind(self, steps: int = 1) -> CheckpointResult:
        """Restores the checkpoint ``steps`` before the latest: any that the store still
        holds, however many ``max_checkpoints`` says (it caps no history)."""
        if not self._initialized:
            return CheckpointResult.fail("Service not initialized")
        if steps < 1:
            return CheckpointResult.fail("steps must be >= 1")
        checkpoints = await self.list_checkpoints(limit=steps + 1)
        if steps >= len(checkpoints):
            return CheckpointResult.fail(
                f"Cannot rewind {steps} step(s): only {len(checkpoints)} checkpoint(s) available"
            )
        return await self.restore(checkpoints[steps].id)

    async def diff(
        self, from_id: Optional[str] = None, to_id: Optional[str] = None
    ) -> CheckpointDiff:
        """The files changed from ``from_id`` (default: the checkpoint before the latest)
        to ``to_id`` (default: the working directory)."""
        if not self._initialized or self._snap is None:
            return CheckpointDiff(from_checkpoint="", to_checkpoint="", files=[])
        try:
            if from_id is None:
                latest = await self.list_checkpoints(limit=2)
                from_id = latest[min(1, len(latest) - 1)].id if latest else None
            if from_id is None:
                return CheckpointDiff(from_checkpoint="", to_checkpoint=None, files=[])
            args = ["diff", from_id, *([to_id] if to_id else []), "--stat"]
            doc = await self._snap._run(args)
            files = [
                FileDiff(
                    path=f["path"],
                    absolute_path=os.path.join(self.config.workspace_dir, f["path"]),
                    status=f["status"],
                    additions=f.get("added") or 0,
                    deletions=f.get("removed") or 0,
                )
                for f in doc["files"]
            ]
            return CheckpointDiff(
                from_checkpoint=from_id[:8], to_checkpoint=to_id[:8] if to_id else None, files=files
            )
        except SnapError as e:
            logger.error("Failed to get diff: %s", e.message)
            return CheckpointDiff(from_checkpoint="", to_checkpoint="", files=[])

    async def list_checkpoints(self, limit: int = 50) -> List[Checkpoint]:
        """Checkpoints on the workspace's current line, newest first."""
        if not self._initialized or self._snap is None:
            return []
        try:
            # The log also lists what redo would bring back, above HEAD: not checkpoints
            # of the current line (as `git log` from HEAD would not show them).
            log = await self._snap.log(limit=limit + _REDO_ALLOWANCE)
        except SnapError as e:
            logger.error("Failed to list checkpoints: %s", e.message)
            return []
        line = [s for s in log.snapshots if not s.redoable]
        return [Checkpoint.from_snapshot(s) for s in line[:limit]]

    async def get_checkpoint(self, checkpoint_id: str) -> Optional[Checkpoint]:
        """The checkpoint with this id or id prefix (4 hex digits or more), if any."""
        if not self._initialized or self._snap is None:
            return None
        try:
            return Checkpoint.from_snapshot(await self._snap.show(checkpoint_id))
        except SnapError:
            return None

    async def get_checkpoint_by_step(self, step: int) -> Optional[Checkpoint]:
        """The newest checkpoint tagged with ``step``. Unlike PraisonAI, whose lookup walks
        back from HEAD only, a checkpoint a restore stepped back over is still found (snap
        keeps it, and can go forward to it)."""
        if not self._initialized or self._snap is None:
            return None
        try:
            log = await self._snap.log(
                limit=self.config.max_checkpoints + _REDO_ALLOWANCE, all=True
            )
        except SnapError:
            return None
        found = next((s for s in log.snapshots if s.step == step), None)
        return Checkpoint.from_snapshot(found) if found else None

    async def cleanup(self) -> None:
        """Marks the service uninitialized; the store and its checkpoints stay."""
        self._initialized = False

    async def delete_all(self) -> bool:
        """Deletes this workspace's store (every checkpoint of it)."""
        try:
            if os.path.exists(self.checkpoint_dir):
                shutil.rmtree(self.checkpoint_dir)
            self._initialized = False
            self._snap = None
            return True
        except OSError as e:
            logger.error("Failed to delete checkpoints: %s", e)
            return False


def _extract_step(message: str) -> Optional[int]:
    match = _STEP_TAG_RE.match(message or "")
    return int(match.group(1)) if match else None
