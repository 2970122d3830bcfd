"""``python -m mmspubench``: the same command line as the ``mmspubench`` console script."""

from __future__ import annotations

import sys

from mmspubench.cli import main

if __name__ == "__main__":
    sys.exit(main())
