"""Entry point of the Hugging Face Space (``app_file: app.py``; the Space runs ``python app.py``).

Settings come from the Space's variables: ``MMSPUBENCH_DATASET`` (Hub id or folder; default the
bundled synthetic release), ``MMSPUBENCH_RESULTS`` (folder or Hub dataset of runs),
``MMSPUBENCH_SPACE_MODELS`` (comma-separated Hub ids for live runs) and
``MMSPUBENCH_PUBLISHED_REVISION`` (dataset revision that submissions must match).
Locally, ``mmspubench space`` launches the same app. Importing this module builds nothing.
"""

from __future__ import annotations

from mmspubench.space.layout import LAUNCH_OPTIONS, SpaceConfig, build_app


def main() -> None:
    """Build the app from the environment and serve it."""
    build_app(SpaceConfig.from_env()).launch(**LAUNCH_OPTIONS)


if __name__ == "__main__":
    main()
