"""Finding the snap-undo binary the wheel installed, as uv's ``find_uv_bin`` finds uv."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig

BIN_NAME = "snap-undo"


def _user_scheme() -> str:
    if sys.platform == "darwin" and getattr(sys, "_framework", ""):
        return "osx_framework_user"
    return "posix_user" if os.name == "posix" else "nt_user"


def _candidates() -> list[str]:
    dirs = [
        sysconfig.get_path("scripts"),
        sysconfig.get_path("scripts", vars={"base": sys.base_prefix}),
    ]
    try:
        dirs.append(sysconfig.get_path("scripts", scheme=_user_scheme()))
    except KeyError:
        pass
    # `pip install --prefix P`: the package is in P/lib/pythonX.Y/site-packages/snap_undo,
    # the binary in P/bin; `pip install --target T`: the package in T/snap_undo, the
    # binary in T/bin.
    package = os.path.dirname(os.path.abspath(__file__))
    site = os.path.dirname(package)
    dirs.append(os.path.join(site, "bin"))
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(site)))
    dirs.append(os.path.join(prefix, "bin"))
    return [os.path.join(d, BIN_NAME) for d in dirs if d]


def find_bin() -> str:
    """The absolute path of the snap-undo binary: ``SNAP_UNDO_BIN`` if set, else the one
    this package was installed with, else the first on ``PATH``."""
    override = os.environ.get("SNAP_UNDO_BIN")
    if override:
        return override
    for path in _candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(BIN_NAME)
    if found:
        return found
    raise FileNotFoundError(
        f"cannot find the {BIN_NAME} binary (looked in {', '.join(_candidates())} and PATH)"
    )
