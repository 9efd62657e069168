"""``Workspace`` and ``AsyncWorkspace``: snap's commands on one directory, through the
binary's ``--json`` documents (docs/JSON.md), as typed results."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from ._bin import find_bin
from ._types import Diff, FileContent, Log, MoveResult, SaveResult, Snapshot, Status, Verify

#: snap's exit code for "nothing to undo or redo".
EXIT_NOTHING_TO_DO = 3


class SnapError(Exception):
    """A snap command failed: ``message`` is its one error line, ``exit_code`` its exit
    code (1 error, 2 usage)."""

    def __init__(self, message: str, exit_code: int, args: Sequence[str] = ()):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command = list(args)


@dataclass
class NothingToDo:
    """An undo or redo that found nothing to undo or redo (exit code 3): a result, not an
    error. ``reason`` is snap's message."""

    reason: str


#: The message of the snapshot ``init`` saves in a new store.
BASELINE_MESSAGE = "baseline"


def _init_args(force: bool) -> List[str]:
    return ["init", *(["--force"] if force else [])]


def _save_args(message: str, step: Optional[int], session: Optional[str],
               meta: Optional[Dict[str, str]], allow_empty: bool) -> List[str]:
    args = ["save", "-m", message]
    if step is not None:
        args += ["--step", str(step)]
    if session is not None:
        args += ["--session", session]
    for key, value in (meta or {}).items():
        args += ["--meta", f"{key}={value}"]
    if allow_empty:
        args.append("--allow-empty")
    return args


def _move_args(op: str, n: int, dry_run: bool, turn: bool, to: Optional[str] = None) -> List[str]:
    args = [op, str(n)] if to is None else [op, "--to", to]
    if turn:
        args.append("--turn")
    if dry_run:
        args.append("--dry-run")
    return args


def _restore_args(reference: str, paths: Sequence[str], dry_run: bool) -> List[str]:
    args = ["restore", reference]
    if dry_run:
        args.append("--dry-run")
    if paths:
        args += ["--", *paths]
    return args


def _log_args(limit: Optional[int], all: bool, session: Optional[str]) -> List[str]:
    args = ["log"]
    if limit is not None:
        args += ["-n", str(limit)]
    if all:
        args.append("--all")
    if session is not None:
        args += ["--session", session]
    return args


def _diff_args(from_ref: Optional[str], to_ref: Optional[str], paths: Sequence[str]) -> List[str]:
    args = ["diff", *(r for r in (from_ref, to_ref) if r is not None)]
    if paths:
        args += ["--", *paths]
    return args


class _Base:
    def __init__(self, path: Union[str, "os.PathLike[str]"], store: Optional[str] = None,
                 binary: Optional[str] = None):
        """snap on the directory ``path``, with the store found as the CLI finds it (or
        ``store``), run through ``binary`` (default: :func:`find_bin`)."""
        self.path = os.fspath(path)
        self.store = store
        self.binary = binary or find_bin()

    def _argv(self, args: Sequence[str]) -> List[str]:
        argv = [self.binary, "-C", self.path, "--json", "--no-progress"]
        if self.store is not None:
            argv += ["--store", self.store]
        return argv + list(args)

    @staticmethod
    def _env() -> Dict[str, str]:
        env = dict(os.environ)
        env.pop("SNAP_STORE", None)
        return env

    @staticmethod
    def _result(args: Sequence[str], code: int, stdout: bytes, stderr: bytes,
                moves: bool = False) -> Any:
        try:
            doc = json.loads(stdout) if stdout.strip() else {}
        except json.JSONDecodeError:
            doc = {}
        # `verify` exits 1 on damage with its report (problems listed), not an error line.
        if code == 0 or (code == 1 and "ok" in doc and "error" not in doc):
            return doc
        message = doc.get("error") or stderr.decode(errors="replace").strip() or "snap failed"
        if moves and code == EXIT_NOTHING_TO_DO:
            return NothingToDo(message)
        raise SnapError(message, code, args)


class Workspace(_Base):
    """snap on the directory ``path`` (its store found as the CLI finds it, or ``store``)."""

    @classmethod
    def init(cls, path: Union[str, "os.PathLike[str]"], store: Optional[str] = None,
             binary: Optional[str] = None, *, force: bool = False,
             baseline: bool = True) -> "Workspace":
        """Creates the store of ``path`` and saves the directory as it is (a snapshot
        named "baseline", which a first ``undo`` returns to), then returns the workspace.
        A store that exists is opened as it is, nothing saved. ``baseline=False`` only
        creates the store (as ``snap init``); ``force`` allows ``/`` and the home
        directory."""
        ws = cls(path, store=store, binary=binary)
        created = ws._run(_init_args(force)).get("created")
        if baseline and created:
            ws._run(_save_args(BASELINE_MESSAGE, None, None, None, False))
        return ws

    def _run(self, args: Sequence[str], moves: bool = False) -> Any:
        proc = subprocess.run(self._argv(args), capture_output=True, env=self._env())
        return self._result(args, proc.returncode, proc.stdout, proc.stderr, moves)

    def save(self, message: str = "", *, step: Optional[int] = None,
             session: Optional[str] = None, meta: Optional[Dict[str, str]] = None,
             allow_empty: bool = False) -> SaveResult:
        """Snapshots the working tree if anything changed (``allow_empty``: even if not);
        ``created`` is False when nothing did. ``step``, ``session`` and ``meta`` tag it."""
        return SaveResult.from_json(self._run(_save_args(message, step, session, meta, allow_empty)))

    def undo(self, n: int = 1, *, dry_run: bool = False, turn: bool = False,
             to: Optional[str] = None) -> Union[MoveResult, NothingToDo]:
        """Back ``n`` snapshots (``turn``: agent turns), or back ``to`` an ancestor of HEAD."""
        return _move(self._run(_move_args("undo", n, dry_run, turn, to), moves=True))

    def redo(self, n: int = 1, *, dry_run: bool = False,
             turn: bool = False) -> Union[MoveResult, NothingToDo]:
        """Forward ``n`` snapshots (``turn``: agent turns) along what undo left."""
        return _move(self._run(_move_args("redo", n, dry_run, turn), moves=True))

    def restore(self, reference: str, paths: Sequence[str] = (), *,
                dry_run: bool = False) -> MoveResult:
        """Makes the working tree (or only ``paths``) match ``reference``, recorded as a new
        snapshot; unsaved changes are saved first."""
        return MoveResult.from_json(self._run(_restore_args(reference, paths, dry_run)))

    def log(self, limit: Optional[int] = None, *, all: bool = False,
            session: Optional[str] = None) -> Log:
        """Snapshots newest first: HEAD's line (``all``: every one), at most ``limit``, only
        ``session``'s if given."""
        return Log.from_json(self._run(_log_args(limit, all, session)))

    def status(self) -> Status:
        """The working tree against HEAD."""
        return Status.from_json(self._run(["status"]))

    def diff(self, from_ref: Optional[str] = None, to_ref: Optional[str] = None,
             paths: Sequence[str] = ()) -> Diff:
        """Files changed from ``from_ref`` (default HEAD) to ``to_ref`` (default the working
        tree), optionally only under ``paths``."""
        return Diff.from_json(self._run(_diff_args(from_ref, to_ref, paths)))

    def show(self, reference: str = "@") -> Snapshot:
        """One snapshot (default HEAD) and the files it changed."""
        return Snapshot.from_json(self._run(["show", reference]))

    def cat(self, reference: str, path: str) -> FileContent:
        """The content of ``path`` in the snapshot ``reference``."""
        return FileContent.from_json(self._run(["cat", reference, path]))

    def verify(self, read_data: bool = False) -> Verify:
        """Checks the store (``read_data``: every byte of every pack too)."""
        return Verify.from_json(self._run(["verify", *(["--read-data"] if read_data else [])]))

    def prune(self, keep_last: int) -> Dict[str, Any]:
        """Deletes snapshots beyond the newest ``keep_last`` (HEAD's line and the redo stack
        are kept); returns snap's report."""
        report: Dict[str, Any] = self._run(["prune", "--keep-last", str(keep_last)])
        return report

    def delete_all(self) -> Dict[str, Any]:
        """Deletes every snapshot of this workspace; returns snap's report."""
        report: Dict[str, Any] = self._run(["delete", "--all", "--yes"])
        return report


class AsyncWorkspace(_Base):
    """``Workspace`` for asyncio: the same methods, as coroutines. Calls from several tasks
    at once are safe; snap serializes them on the store lock."""

    @classmethod
    async def init(cls, path: Union[str, "os.PathLike[str]"], store: Optional[str] = None,
                   binary: Optional[str] = None, *, force: bool = False,
                   baseline: bool = True) -> "AsyncWorkspace":
        """Creates the store of ``path`` and saves the directory as it is (a snapshot
        named "baseline", which a first ``undo`` returns to), then returns the workspace.
        A store that exists is opened as it is, nothing saved. ``baseline=False`` only
        creates the store (as ``snap init``); ``force`` allows ``/`` and the home
        directory."""
        ws = cls(path, store=store, binary=binary)
        created = (await ws._run(_init_args(force))).get("created")
        if baseline and created:
            await ws._run(_save_args(BASELINE_MESSAGE, None, None, None, False))
        return ws

    async def _run(self, args: Sequence[str], moves: bool = False) -> Any:
        proc = await asyncio.create_subprocess_exec(
            *self._argv(args), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._env(),
        )
        stdout, stderr = await proc.communicate()
        return self._result(args, proc.returncode or 0, stdout, stderr, moves)

    async def save(self, message: str = "", *, step: Optional[int] = None,
                   session: Optional[str] = None, meta: Optional[Dict[str, str]] = None,
                   allow_empty: bool = False) -> SaveResult:
        """Snapshots the working tree if anything changed (``allow_empty``: even if not);
        ``created`` is False when nothing did. ``step``, ``session`` and ``meta`` tag it."""
        doc = await self._run(_save_args(message, step, session, meta, allow_empty))
        return SaveResult.from_json(doc)

    async def undo(self, n: int = 1, *, dry_run: bool = False, turn: bool = False,
                   to: Optional[str] = None) -> Union[MoveResult, NothingToDo]:
        """Back ``n`` snapshots (``turn``: agent turns), or back ``to`` an ancestor of HEAD."""
        return _move(await self._run(_move_args("undo", n, dry_run, turn, to), moves=True))

    async def redo(self, n: int = 1, *, dry_run: bool = False,
                   turn: bool = False) -> Union[MoveResult, NothingToDo]:
        """Forward ``n`` snapshots (``turn``: agent turns) along what undo left."""
        return _move(await self._run(_move_args("redo", n, dry_run, turn), moves=True))

    async def restore(self, reference: str, paths: Sequence[str] = (), *,
                      dry_run: bool = False) -> MoveResult:
        """Makes the working tree (or only ``paths``) match ``reference``, recorded as a new
        snapshot; unsaved changes are saved first."""
        return MoveResult.from_json(await self._run(_restore_args(reference, paths, dry_run)))

    async def log(self, limit: Optional[int] = None, *, all: bool = False,
                  session: Optional[str] = None) -> Log:
        """Snapshots newest first: HEAD's line (``all``: every one), at most ``limit``, only
        ``session``'s if given."""
        return Log.from_json(await self._run(_log_args(limit, all, session)))

    async def status(self) -> Status:
        """The working tree against HEAD."""
        return Status.from_json(await self._run(["status"]))

    async def diff(self, from_ref: Optional[str] = None, to_ref: Optional[str] = None,
                   paths: Sequence[str] = ()) -> Diff:
        """Files changed from ``from_ref`` (default HEAD) to ``to_ref`` (default the working
        tree), optionally only under ``paths``."""
        return Diff.from_json(await self._run(_diff_args(from_ref, to_ref, paths)))

    async def show(self, reference: str = "@") -> Snapshot:
        """One snapshot (default HEAD) and the files it changed."""
        return Snapshot.from_json(await self._run(["show", reference]))

    async def cat(self, reference: str, path: str) -> FileContent:
        """The content of ``path`` in the snapshot ``reference``."""
        return FileContent.from_json(await self._run(["cat", reference, path]))

    async def verify(self, read_data: bool = False) -> Verify:
        """Checks the store (``read_data``: every byte of every pack too)."""
        args = ["verify", *(["--read-data"] if read_data else [])]
        return Verify.from_json(await self._run(args))

    async def prune(self, keep_last: int) -> Dict[str, Any]:
        """Deletes snapshots beyond the newest ``keep_last`` (HEAD's line and the redo stack
        are kept); returns snap's report."""
        report: Dict[str, Any] = await self._run(["prune", "--keep-last", str(keep_last)])
        return report

    async def delete_all(self) -> Dict[str, Any]:
        """Deletes every snapshot of this workspace; returns snap's report."""
        report: Dict[str, Any] = await self._run(["delete", "--all", "--yes"])
        return report


def _move(doc: Any) -> Union[MoveResult, NothingToDo]:
    return doc if isinstance(doc, NothingToDo) else MoveResult.from_json(doc)
