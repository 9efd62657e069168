"""PraisonAI's own example and unit tests, run against the drop-in: ``praisonaiagents
.checkpoints`` is imported as ``snap_undo.checkpoints`` (``praisonai_swap``) before the test
files here are. They need ``pytest-asyncio`` (PraisonAI's tests are ``pytest.mark.asyncio``)
and ``praisonaiagents`` (the example makes an ``Agent``); without them they are skipped
loudly, and ``SNAP_UNDO_REQUIRE_PRAISONAI=1`` (set by ``.ci/run``) makes that a failure."""

import importlib.util
import os

import pytest

from praisonai_swap import use_snap_undo

HERE = os.path.dirname(os.path.abspath(__file__))

use_snap_undo()


def missing():
    """The packages these tests need that are not installed."""
    return [m for m in ("praisonaiagents", "pytest_asyncio") if importlib.util.find_spec(m) is None]


def pytest_collection_modifyitems(config, items):
    lacking = missing()
    if not lacking:
        return
    why = f"{' and '.join(lacking)} not installed (pip install praisonaiagents pytest-asyncio)"
    if os.environ.get("SNAP_UNDO_REQUIRE_PRAISONAI") == "1":
        raise pytest.UsageError(f"SNAP_UNDO_REQUIRE_PRAISONAI=1 but {why}")
    for item in items:
        if str(item.fspath).startswith(HERE + os.sep):
            item.add_marker(pytest.mark.skip(reason=f"SKIPPED LOUDLY: {why}"))
