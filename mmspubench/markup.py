"""Text from a run, a dataset or a person, made safe to place in Markdown (Gradio's ``gr.Markdown``).

Gradio renders Markdown with raw HTML allowed (then sanitised, which still lets ``<img>`` and
links through), so a name like ``[win](https://x)`` or ``<img src=https://x>`` would render as a
link or make every viewer's browser fetch a URL. Escaped, it shows as the characters it is.
"""

from __future__ import annotations

import string

_ESCAPES = {ord(c): "\\" + c for c in string.punctuation}
"""Every ASCII punctuation character backslash-escaped: CommonMark then renders each one literally,
so no emphasis, link, image, autolink (``http://``, ``www.``, e-mail), HTML tag, entity, heading,
list, table or code span can start inside the text."""


def escape_markdown(text: str) -> str:
    """``text`` with every Markdown and HTML metacharacter escaped, so it renders literally."""
    return str(text).translate(_ESCAPES)
