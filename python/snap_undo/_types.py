"""Typed mirrors of the JSON documents of docs/JSON.md. Each is built from the document by
``from_json``, which keeps the fields it knows and ignores any a newer snap adds."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Type, TypeVar

T = TypeVar("T")


def _build(cls: Type[T], doc: Dict[str, Any], **nested: Any) -> T:
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values = {k: v for k, v in doc.items() if k in names}
    values.update(nested)
    return cls(**values)


@dataclass
class Stats:
    """What a snapshot changed, and the size of its tree."""

    added: int = 0
    modified: int = 0
    deleted: int = 0
    files: int = 0
    bytes: int = 0
    lines_added: int = 0
    lines_removed: int = 0

    @classmethod
    def from_json(cls, doc: Optional[Dict[str, Any]]) -> "Stats":
        """The Stats of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(cls, doc or {})


@dataclass
class Change:
    """One path and how it changed: ``added``, ``modified`` or ``deleted``."""

    path: str
    status: str

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Change":
        """The Change of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(cls, doc)


def _changes(docs: Optional[List[Dict[str, Any]]]) -> List[Change]:
    return [Change.from_json(d) for d in docs or []]


@dataclass
class Snapshot:
    """A snapshot (docs/JSON.md: the snapshot object)."""

    id: str
    short_id: str
    seq: int
    kind: str
    #: When it was taken, in UTC (from ``time_ns``; the JSON's ``time`` is text).
    time: datetime
    #: The same instant in nanoseconds since the Unix epoch, exactly as recorded.
    time_ns: int
    message: str = ""
    step: Optional[int] = None
    session: Optional[str] = None
    meta: Dict[str, str] = field(default_factory=dict)
    parent: Optional[str] = None
    tree: Optional[str] = None
    stats: Stats = field(default_factory=Stats)
    changes: List[Change] = field(default_factory=list)
    is_head: bool = False
    redoable: bool = False
    abandoned: bool = False

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Snapshot":
        """The Snapshot of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(
            cls,
            doc,
            time=_utc(int(doc["time_ns"])),
            stats=Stats.from_json(doc.get("stats")),
            changes=_changes(doc.get("changes")),
        )


def _utc(ns: int) -> datetime:
    """``ns`` nanoseconds after the epoch, to the microsecond, in UTC."""
    seconds, rest = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, tz=timezone.utc).replace(microsecond=rest // 1000)


def _snapshot(doc: Optional[Dict[str, Any]]) -> Optional[Snapshot]:
    return Snapshot.from_json(doc) if doc else None


def _head_id(head: Any) -> Optional[str]:
    """HEAD's id from a document's ``head``: a snapshot object (as snap prints it now), or
    the id alone (as older snaps printed it)."""
    if isinstance(head, dict):
        return str(head["id"])
    return head if isinstance(head, str) else None


@dataclass
class TooLarge:
    """A file left out for being over ``max_file_size``."""

    path: str
    size: int

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "TooLarge":
        """The TooLarge of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(cls, doc)


@dataclass
class Unreadable:
    """A file or directory snap may not read, left out and never touched."""

    path: str
    error: str

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Unreadable":
        """The Unreadable of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(cls, doc)


@dataclass
class Skipped:
    """What a save or status left out (docs/JSON.md: ``skipped``)."""

    skipped_too_large: List[TooLarge] = field(default_factory=list)
    #: How many FIFOs, sockets and devices.
    skipped_special: int = 0
    skipped_unreadable: List[Unreadable] = field(default_factory=list)
    #: Ignore files over ``max_ignore_file_bytes``: each one's directory is left out whole.
    ignore_files_refused: List[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, doc: Optional[Dict[str, Any]]) -> "Skipped":
        """The Skipped of snap's JSON document; fields a newer snap adds are ignored."""
        doc = doc or {}
        return _build(
            cls,
            doc,
            skipped_too_large=[TooLarge.from_json(d) for d in doc.get("skipped_too_large") or []],
            skipped_unreadable=[
                Unreadable.from_json(d) for d in doc.get("skipped_unreadable") or []
            ],
        )


@dataclass
class SaveResult:
    """``snap save``: ``created`` is false when nothing changed."""

    created: bool
    head: Optional[str] = None
    id: Optional[str] = None
    seq: Optional[int] = None
    changes: List[Change] = field(default_factory=list)
    snapshot: Optional[Snapshot] = None
    skipped: Skipped = field(default_factory=Skipped)

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "SaveResult":
        """The SaveResult of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(
            cls,
            doc,
            head=_head_id(doc.get("head")),
            changes=_changes(doc.get("changes")),
            snapshot=_snapshot(doc.get("snapshot")),
            skipped=Skipped.from_json(doc.get("skipped")),
        )


@dataclass
class MoveResult:
    """``snap undo``, ``redo`` and ``restore`` (and their previews)."""

    op: str
    dry_run: bool
    target: Snapshot
    head: Optional[str] = None
    created: Optional[Snapshot] = None
    auto_saved: Optional[Snapshot] = None
    had_unsaved_changes: bool = False
    passed: List[Snapshot] = field(default_factory=list)
    passed_count: int = 0
    changes: List[Change] = field(default_factory=list)
    kept: List[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "MoveResult":
        """The MoveResult of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(
            cls,
            doc,
            target=Snapshot.from_json(doc["target"]),
            head=_head_id(doc.get("head")),
            created=_snapshot(doc.get("created")),
            auto_saved=_snapshot(doc.get("auto_saved")),
            passed=[Snapshot.from_json(s) for s in doc.get("passed") or []],
            changes=_changes(doc.get("changes")),
        )


@dataclass
class Status:
    """``snap status``: the working tree against HEAD."""

    clean: bool
    root: str
    head: Optional[str] = None
    changes: List[Change] = field(default_factory=list)
    dirs: List[Change] = field(default_factory=list)
    redo_depth: int = 0
    pending: Optional[Dict[str, Any]] = None
    workspace_id: Optional[str] = None
    hook_failure: Optional[Dict[str, Any]] = None
    skipped: Skipped = field(default_factory=Skipped)

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Status":
        """The Status of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(
            cls,
            doc,
            head=_head_id(doc.get("head")),
            changes=_changes(doc.get("changes")),
            dirs=_changes(doc.get("dirs")),
            skipped=Skipped.from_json(doc.get("skipped")),
        )


@dataclass
class Log:
    """``snap log``: snapshots newest first."""

    snapshots: List[Snapshot]
    head: Optional[str] = None
    stats: Optional[Dict[str, Any]] = None

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Log":
        """The Log of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(
            cls,
            doc,
            head=_head_id(doc.get("head")),
            snapshots=[Snapshot.from_json(s) for s in doc["snapshots"]],
        )


@dataclass
class FileDiff:
    """One file of ``snap diff``."""

    path: str
    status: str
    added: int = 0
    removed: int = 0
    binary: bool = False
    lines: List[str] = field(default_factory=list)
    lines_cut: int = 0
    old_size: Optional[int] = None
    new_size: Optional[int] = None
    old_mode: Optional[str] = None
    new_mode: Optional[str] = None

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "FileDiff":
        """The FileDiff of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(cls, doc)


@dataclass
class Diff:
    """``snap diff``: one page of files."""

    files: List[FileDiff]
    from_: str = ""
    to: str = ""
    page: int = 1
    pages: int = 1
    files_per_page: int = 0
    total_files: int = 0

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Diff":
        """The Diff of snap's JSON document; fields a newer snap adds are ignored."""
        doc = dict(doc)
        doc["from_"] = doc.pop("from", "")
        return _build(cls, doc, files=[FileDiff.from_json(f) for f in doc["files"]])


@dataclass
class FileContent:
    """``snap cat``: ``content`` is None (and ``binary`` true) when not UTF-8."""

    path: str
    size: int
    binary: bool
    content: Optional[str] = None

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "FileContent":
        """The FileContent of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(cls, doc)


@dataclass
class Verify:
    """``snap verify``: ``ok`` when ``problems`` is empty."""

    ok: bool
    packs: int = 0
    objects: int = 0
    snapshots: int = 0
    bytes_read: int = 0
    read_data: bool = False
    problems: List[Dict[str, Any]] = field(default_factory=list)
    history_outside_catalog: List[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Verify":
        """The Verify of snap's JSON document; fields a newer snap adds are ignored."""
        return _build(cls, doc)
