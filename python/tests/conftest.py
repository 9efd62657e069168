"""The suite runs against an installed snap-undo wheel (the binary it ships, found by
``find_bin``). Without one every test is skipped with a loud reason; ``.ci/run`` sets
``SNAP_UNDO_REQUIRE_WHEEL=1``, which turns that skip into a failure."""

import os
import pytest


def _installed_bin():
    try:
        import snap_undo
    except ImportError:
        return None
    try:
        return snap_undo.find_bin()
    except FileNotFoundError:
        return None


def _wheel_problem():
    """Why the tests cannot run against an installed wheel, or None."""
    if not _installed_bin():
        return "the snap-undo wheel is not installed (pip install ./python)"
    import snap_undo

    if "site-packages" not in snap_undo.__file__:
        return f"snap_undo is imported from {snap_undo.__file__}, not from an installed wheel"
    return None


def pytest_collection_modifyitems(config, items):
    why = _wheel_problem()
    if why is None:
        return
    if os.environ.get("SNAP_UNDO_REQUIRE_WHEEL") == "1":
        raise pytest.UsageError(f"SNAP_UNDO_REQUIRE_WHEEL=1 but {why}")
    for item in items:
        item.add_marker(pytest.mark.skip(reason=f"SKIPPED LOUDLY: {why}"))


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty project directory (not a store yet); HOME moved away from the user's."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SNAP_STORE", raising=False)
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def snap_bin():
    return _installed_bin()
