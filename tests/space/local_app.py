"""A Gradio app served on 127.0.0.1 at a free port with the Space's launch options, for the tests that
talk to it over HTTP."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import gradio as gr


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch_local(demo: gr.Blocks) -> str:
    """Start ``demo`` without blocking, as the Space does (``LAUNCH_OPTIONS``); its URL, no trailing ``/``.
    The caller closes it."""
    from mmspubench.space.layout import LAUNCH_OPTIONS

    demo.launch(
        server_name="127.0.0.1",
        server_port=free_port(),
        prevent_thread_lock=True,
        **LAUNCH_OPTIONS,  # quiet among them
    )
    return str(demo.local_url).rstrip("/")
