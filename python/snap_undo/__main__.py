"""``python -m snap_undo ARGS`` runs the snap-undo binary with ARGS."""

import os
import sys

from ._bin import find_bin


def main() -> None:
    """Runs the installed snap-undo binary with this process's arguments."""
    binary = find_bin()
    if sys.platform == "win32":  # pragma: no cover - snap is Linux-first
        import subprocess

        sys.exit(subprocess.call([binary, *sys.argv[1:]]))
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
