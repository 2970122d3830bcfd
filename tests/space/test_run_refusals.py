"""The Run tab's refusals read well and stay on the page: ``notes.png is not an image file``."""

from __future__ import annotations

import html
import io
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.space import handlers, live
from mmspubench.space.handlers import UPLOADED_IMAGE, SpaceState
from mmspubench.space.layout import build_app
from PIL import Image

from tests.dataset_builder.raw_fixtures import write_png_header_only

from .test_handlers import state  # noqa: F401  (fixture)

WANTED = "upload a PNG, JPEG or WebP picture"
NOT_RUN = "**Not run.**"
TEXTS = ["What is it?", "a", "b", "c", "d", "A", "cls", "round", "red"]


def _zip(path: Path) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("photo.png", b"x")
    path.write_bytes(buffer.getvalue())
    return path


def _cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    gif, svg, big = tmp_path / "gif.png", tmp_path / "drawing.png", tmp_path / "big.png"
    Image.new("RGB", (8, 8), "red").save(gif, format="GIF")
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>')
    big.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(6 * 2**20))
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "notes.png").write_text("just some text, not a picture\n")
    write_png_header_only(tmp_path / "huge.png", 20_000, 20_000)
    pixels = live.MAX_UPLOAD_PIXELS
    return {
        "zip": (
            _zip(tmp_path / "photo.png"),
            f"photo.png is not an image file (its content is a ZIP archive); {WANTED}",
        ),
        "empty": (tmp_path / "empty.png", f"empty.png is empty (0 bytes); {WANTED}"),
        "text": (tmp_path / "notes.png", f"notes.png is not an image file (its content is text); {WANTED}"),
        "gif": (gif, f"gif.png is a GIF image; {WANTED}"),
        "svg": (svg, f"drawing.png is an SVG image; {WANTED}"),
        "bytes": (big, "big.png is 6.0 MB; pictures up to 5.0 MB are accepted"),
        "pixels": (
            tmp_path / "huge.png",
            f"huge.png has too many pixels (400000000); pictures up to {pixels} pixels are accepted",
        ),
    }


@pytest.mark.parametrize("case", ["zip", "empty", "text", "gif", "svg", "bytes", "pixels"])
def test_an_upload_refusal_names_the_file_and_reads_as_a_sentence(tmp_path: Path, case: str) -> None:
    path, message = _cases(tmp_path)[case]
    with pytest.raises(MMSpuBenchError) as info:
        live.load_upload(path)
    assert (
        str(info.value) == message
    )  # was: upload 'photo.png' is a unknown (not an image) file by its content...


def test_the_run_tab_says_the_refusal_on_the_page_and_empties_the_rest(
    state: SpaceState,  # noqa: F811
    tmp_path: Path,
) -> None:
    path, message = _cases(tmp_path)["zip"]
    page_run = handlers.refusal_on_page(handlers.run_model)
    answer, probs, cgl, reading, record = page_run(
        state, live.BUNDLED_CHOICE, UPLOADED_IMAGE, None, str(path), *TEXTS
    )
    assert html.unescape(answer) == f"{NOT_RUN} {message}"
    assert probs.empty and cgl.empty and reading == "" and record is None  # nothing of an earlier run
    answer, *_ = page_run(state, live.BUNDLED_CHOICE, handlers.SELECTED_ITEM, "", None, *TEXTS)
    assert html.unescape(answer).startswith(f"{NOT_RUN} no item selected")
    with pytest.raises(MMSpuBenchError):  # the API's own function still raises (gradio_client, tests)
        handlers.run_model(state, live.BUNDLED_CHOICE, UPLOADED_IMAGE, None, str(path), *TEXTS)


def test_the_run_button_answers_the_refusal_instead_of_a_fading_error(
    state: SpaceState,  # noqa: F811
    tmp_path: Path,
) -> None:
    demo = build_app(state=state)
    run = next(fn for fn in demo.fns.values() if fn.api_name == "run")
    path, message = _cases(tmp_path)["text"]
    out: Any = run.fn(live.BUNDLED_CHOICE, UPLOADED_IMAGE, None, str(path), *TEXTS)  # no gr.Error raised
    assert html.unescape(out[0]) == f"{NOT_RUN} {message}" and out[1] is None and out[2] is None


def test_a_busy_model_is_still_an_error_not_a_refusal(state: SpaceState, tmp_path: Path) -> None:  # noqa: F811
    def busy(*_: Any) -> Any:
        raise MMSpuBenchError(live.BUSY_MESSAGE)

    with pytest.raises(MMSpuBenchError, match="busy"):
        handlers.refusal_on_page(busy)(state)
