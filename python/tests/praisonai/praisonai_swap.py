"""The import swap PraisonAI's users make, done for PraisonAI's own files: after
``use_snap_undo()``, ``praisonaiagents.checkpoints`` (and its ``service`` and ``types``
modules) are ``snap_undo.checkpoints``; the rest of ``praisonaiagents`` stays itself."""

import sys

#: PraisonAI's module names and the drop-in's modules that stand for them.
SWAPPED = {
    "praisonaiagents.checkpoints": "snap_undo.checkpoints",
    "praisonaiagents.checkpoints.service": "snap_undo.checkpoints.service",
    "praisonaiagents.checkpoints.types": "snap_undo.checkpoints.types",
}


def use_snap_undo() -> None:
    """Makes ``import praisonaiagents.checkpoints...`` give the drop-in's modules."""
    import importlib

    for theirs, ours in SWAPPED.items():
        sys.modules[theirs] = importlib.import_module(ours)


if __name__ == "__main__":
    # python praisonai_swap.py SCRIPT ARGS...: runs SCRIPT as __main__ with the swap made.
    import runpy

    use_snap_undo()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
