"""Entry point of the Hugging Face Space (``app_file: app.py``; the Space runs ``python app.py``).

Settings come from the Space's variables: ``MMSPUBENCH_DATASET`` (Hub id or folder; default the
bundled synthetic release), ``MMSPUBENCH_RESULTS`` (folder or Hub dataset of runs),
``MMSPUBENCH_SPACE_MODELS`` (comma-separated Hub ids for live runs) and
``MMSPUBENCH_PUBLISHED_REVISION`` (dataset revision that submissions must match).
The port is ``GRADIO_SERVER_PORT``, else ``PORT``, else 7860; the address ``GRADIO_SERVER_NAME``
(Gradio's default 127.0.0.1; a Space sets 0.0.0.0). Ctrl-C or SIGTERM stops the server with one
line. Locally, ``mmspubench space`` launches the same app. Importing this module builds nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from mmspubench.errors import MMSpuBenchError

PORT_VARIABLES: tuple[str, ...] = ("GRADIO_SERVER_PORT", "PORT")
"""Where the port is read from, first set wins (Gradio's own variable, then the common ``PORT``)."""
DEFAULT_PORT = 7860


def server_port(env: Mapping[str, str] = os.environ) -> int:
    """The port to listen on from :data:`PORT_VARIABLES`; a value that is no port is one line."""
    for name in PORT_VARIABLES:
        value = env.get(name, "").strip()
        if not value:
            continue
        if not (value.isascii() and value.isdigit() and 1 <= int(value) <= 65535):
            raise MMSpuBenchError(f"{name}={value[:40]!r}: expected a port number from 1 to 65535")
        return int(value)
    return DEFAULT_PORT


def main() -> None:
    """Build the app from the environment and serve it until Ctrl-C or SIGTERM (one line each)."""
    from mmspubench.redact import clean

    try:
        port = server_port()
    except MMSpuBenchError as err:
        print(f"mmspubench space: error: {clean(str(err))}", file=sys.stderr)
        raise SystemExit(2) from None
    from mmspubench.space.cli import stop_signals
    from mmspubench.space.layout import LAUNCH_OPTIONS, SpaceConfig, build_app

    demo = build_app(SpaceConfig.from_env())
    with stop_signals() as wait:
        demo.launch(server_port=port, prevent_thread_lock=True, **LAUNCH_OPTIONS)
        print(f"mmspubench space: serving on port {port}; Ctrl-C or SIGTERM stops it", file=sys.stderr)
        how = wait()
    demo.close()
    print(f"mmspubench space: stopped ({how})", file=sys.stderr)


if __name__ == "__main__":
    main()
