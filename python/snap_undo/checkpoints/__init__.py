"""A drop-in for ``praisonaiagents.checkpoints``: change the import and keep the code::

    from snap_undo.checkpoints import CheckpointService

    service = CheckpointService(workspace_dir="/path/to/project")
    await service.initialize()
    result = await service.save("Before refactoring")
    await service.restore(result.checkpoint.id)

The same names, constructor, methods, properties and events, over a snap store (one per
workspace under ``storage_dir``) instead of a shadow git repository. Differences, where
PraisonAI's behaviour loses data, are in ``service``'s docstring.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as type checkers see them; at run time they load lazily
    from .service import CheckpointService
    from .types import (
        Checkpoint,
        CheckpointConfig,
        CheckpointDiff,
        CheckpointEvent,
        CheckpointResult,
        FileDiff,
    )

__all__ = [
    "CheckpointService",
    "Checkpoint",
    "CheckpointDiff",
    "CheckpointConfig",
    "CheckpointEvent",
    "CheckpointResult",
    "FileDiff",
]


def __getattr__(name: str) -> Any:
    """Loads ``CheckpointService`` and the types on first use (as PraisonAI's module does)."""
    if name == "CheckpointService":
        from .service import CheckpointService

        return CheckpointService
    if name in __all__:
        from . import types

        return getattr(types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
