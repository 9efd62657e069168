"""The types of ``praisonaiagents.checkpoints.types``, with the same names, fields and
methods, for snapshots kept by snap instead of a shadow git repository."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Dict, List, Optional, Union


def _parse_iso_timestamp(timestamp: str) -> datetime:
    """An ISO 8601 time, a trailing ``Z`` read as UTC (as PraisonAI parses git's ``%aI``)."""
    if timestamp.endswith("Z"):
        timestamp = timestamp[:-1] + "+00:00"
    return datetime.fromisoformat(timestamp)


def default_storage_dir() -> str:
    """PraisonAI's default, so that an existing layout keeps working."""
    return os.path.join(os.path.expanduser("~"), ".praisonai", "checkpoints")


class CheckpointEvent(str, Enum):
    """Events emitted by the checkpoint service."""

    INITIALIZED = "initialized"
    CHECKPOINT_CREATED = "checkpoint_created"
    CHECKPOINT_RESTORED = "checkpoint_restored"
    CHECKPOINTS_PRUNED = "checkpoints_pruned"
    ERROR = "error"


@dataclass
class CheckpointConfig:
    """Configuration for the checkpoint service. ``user_name`` and ``user_email`` are kept
    for compatibility (snap records no author); ``max_file_size`` and ``exclude_patterns``
    are likewise accepted, while snap's own limits and ignore rules decide (its
    ``.snap/config.toml`` and ``.gitignore``/``.snapignore`` files)."""

    workspace_dir: str
    storage_dir: Optional[str] = None
    enabled: bool = True
    auto_checkpoint: bool = True
    max_checkpoints: int = 100
    user_name: str = field(
        default_factory=lambda: os.getenv("PRAISONAI_GIT_USER_NAME", "PraisonAI Checkpoints")
    )
    user_email: str = field(
        default_factory=lambda: os.getenv("PRAISONAI_GIT_USER_EMAIL", "checkpoints@praison.ai")
    )
    max_file_size: int = 2 * 1024 * 1024
    exclude_patterns: List[str] = field(
        default_factory=lambda: [
            ".git", ".praisonai", "__pycache__", "*.pyc", ".env", "node_modules", ".venv",
            "venv", "*.log",
        ]
    )

    def __post_init__(self) -> None:
        self.workspace_dir = os.path.expanduser(self.workspace_dir)
        if self.storage_dir:
            self.storage_dir = os.path.expanduser(self.storage_dir)
        else:
            self.storage_dir = default_storage_dir()

    def get_checkpoint_dir(self) -> str:
        """This workspace's snap store: one per workspace under ``storage_dir``."""
        digest = hashlib.sha256(self.workspace_dir.encode()).hexdigest()[:12]
        return os.path.join(str(self.storage_dir), digest)


@dataclass
class Checkpoint:
    """One checkpoint: a snap snapshot (``id`` is its 64-hex-digit id)."""

    id: str
    short_id: str
    message: str
    timestamp: datetime
    files_changed: int = 0
    insertions: int = 0
    deletions: int = 0
    step: Optional[int] = None

    @classmethod
    def from_snapshot(cls, snapshot: Any) -> "Checkpoint":
        """From a ``snap_undo.Snapshot``."""
        stats = snapshot.stats
        return cls(
            id=snapshot.id,
            short_id=snapshot.id[:8],
            message=snapshot.message,
            timestamp=snapshot.time,
            files_changed=stats.added + stats.modified + stats.deleted,
            insertions=stats.lines_added,
            deletions=stats.lines_removed,
            step=snapshot.step,
        )

    @classmethod
    def from_git_commit(
        cls, commit_hash: str, message: str, timestamp: Union[str, datetime]
    ) -> "Checkpoint":
        """Kept for compatibility with PraisonAI's: a checkpoint from an id (here a
        snapshot id), a message and an ISO 8601 time (or a ``datetime``)."""
        return cls(
            id=commit_hash,
            short_id=commit_hash[:8],
            message=message,
            timestamp=(
                _parse_iso_timestamp(timestamp) if isinstance(timestamp, str) else timestamp
            ),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The fields as PraisonAI's ``to_dict`` gives them (times in ISO 8601)."""
        return {
            "id": self.id,
            "short_id": self.short_id,
            "message": self.message,
            "timestamp": self.timestamp.isoformat(),
            "files_changed": self.files_changed,
            "insertions": self.insertions,
            "deletions": self.deletions,
            "step": self.step,
        }


@dataclass
class FileDiff:
    """The diff of one file."""

    path: str
    absolute_path: str
    status: str
    additions: int = 0
    deletions: int = 0
    before_content: Optional[str] = None
    after_content: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """The fields as PraisonAI's ``to_dict`` gives them (times in ISO 8601)."""
        return {
            "path": self.path,
            "absolute_path": self.absolute_path,
            "status": self.status,
            "additions": self.additions,
            "deletions": self.deletions,
        }


@dataclass
class CheckpointDiff:
    """A diff between two checkpoints (``to_checkpoint`` None: the working directory)."""

    from_checkpoint: str
    to_checkpoint: Optional[str]
    files: List[FileDiff] = field(default_factory=list)
    total_additions: int = 0
    total_deletions: int = 0

    def __post_init__(self) -> None:
        self.total_additions = sum(f.additions for f in self.files)
        self.total_deletions = sum(f.deletions for f in self.files)

    def to_dict(self) -> Dict[str, Any]:
        """The fields as PraisonAI's ``to_dict`` gives them (times in ISO 8601)."""
        return {
            "from_checkpoint": self.from_checkpoint,
            "to_checkpoint": self.to_checkpoint,
            "files": [f.to_dict() for f in self.files],
            "total_additions": self.total_additions,
            "total_deletions": self.total_deletions,
        }


@dataclass
class CheckpointResult:
    """The result of a checkpoint operation."""

    success: bool
    checkpoint: Optional[Checkpoint] = None
    error: Optional[str] = None

    @classmethod
    def ok(cls, checkpoint: Checkpoint) -> "CheckpointResult":
        """A success carrying ``checkpoint``."""
        return cls(success=True, checkpoint=checkpoint)

    @classmethod
    def fail(cls, error: str) -> "CheckpointResult":
        """A failure saying ``error``."""
        return cls(success=False, error=error)
