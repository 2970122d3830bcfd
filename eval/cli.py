"""Module entry point kept for ``python -m mmspubench.eval.cli`` (``accelerate launch``, ``torchrun``).

The dispatcher lives in :mod:`mmspubench.cli`; it is imported only when this module runs, so the
eval part never imports the package top (or the Space) at import time.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Same as the ``mmspubench`` console script."""
    from mmspubench.cli import main as dispatch

    return dispatch(argv)


if __name__ == "__main__":
    sys.exit(main())
