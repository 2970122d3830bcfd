"""``python -m mmspubench``: the same command line as the ``mmspubench`` console script.

From a clone whose package is not installed in the Python that runs it (``python3 -m mmspubench``
outside the environment ``make run`` made), only this folder is importable, not the parts mapped
onto the clone's top-level folders (``mmspubench.eval`` is ``eval/``...): that is one line saying
how to reach the installed command, never a traceback.
"""

from __future__ import annotations

import sys


def _not_installed(err: ModuleNotFoundError) -> int:
    """One line for a command that cannot even be imported here; exit 2."""
    name = err.name or "a module"
    what = (
        "the package is not installed in this Python"
        if name.startswith("mmspubench")
        else f"the package needs {name!r}, which this Python lacks"
    )
    print(
        f"mmspubench: error: {what} ({sys.executable}): use the environment `make run` made "
        "(.venv/bin/mmspubench ..., or `. .venv/bin/activate` first), or install it: pip install -e .",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    try:
        from mmspubench.cli import main
    except ModuleNotFoundError as err:
        sys.exit(_not_installed(err))
    sys.exit(main())
