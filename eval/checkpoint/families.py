"""Loading any image-text-to-text family: processors without a video part, missing packages named.

- :func:`load_processor` builds the processor class a model folder names (``processor_config.json``,
  else the config's ``model_type``) from its saved parts. When that class also takes a video
  processor (Qwen2/2.5/3-VL, GLM-4V, LLaVA-OneVision, SmolVLM, InternVL, ...), it is built without
  one: video processors need torchvision, and the benchmark never sends a video.
  :func:`without_video` does this for any ``ProcessorMixin`` subclass, read from its ``__init__``.
- :func:`missing_package` turns an ``ImportError`` (or the ``RecursionError`` some processors raise
  when a backend is missing) into the pip package to install, so a loading failure is one line
  naming the family and the package.
"""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.json_strict import load_file

MODULE_PACKAGES: dict[str, str] = {
    "torchvision": "torchvision",
    "timm": "timm",
    "num2words": "num2words",
    "sentencepiece": "sentencepiece",
    "google": "protobuf",
    "cv2": "opencv-python",
    "einops": "einops",
    "tiktoken": "tiktoken",
    "av": "av",
    "decord": "decord",
    "scipy": "scipy",
}
"""Top-level module name -> the pip package that provides it."""

_BACKEND_RES = (
    re.compile(r"requires the (\w+) library", re.IGNORECASE),
    re.compile(r"package `?([\w.-]+)`? is required", re.IGNORECASE),
    re.compile(r"missing optional dependencies: ([\w.-]+)", re.IGNORECASE),
    re.compile(r"pip install ([\w.-]+)"),
)
"""How transformers names a missing backend in a message (no module name on the error)."""


def missing_package(err: BaseException) -> str | None:
    """The pip package whose absence caused ``err`` (an import failure), or ``None`` if unknown."""
    name = getattr(err, "name", None)
    if isinstance(name, str) and name:
        top = name.split(".")[0]
        return MODULE_PACKAGES.get(top, top)
    for pattern in _BACKEND_RES:
        found = pattern.search(str(err))
        if found:
            backend = found.group(1).rstrip(".").lower()
            return MODULE_PACKAGES.get(backend, backend)
    return None


class NoVideoProcessor:
    """Stands in for a processor's video part: its settings read as ``None``, a video is refused.

    Some processors read video settings while rendering text (SmolVLM's ``num_frames``).
    """

    def __getattr__(self, name: str) -> None:
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("this processor was loaded without its video part; videos are not supported")

    def __repr__(self) -> str:
        return "NoVideoProcessor()"


def _is_video(attribute: str) -> bool:
    return "video" in attribute


def _declared_attributes(cls: type) -> list[str]:
    """The sub-processor arguments of ``cls.__init__`` (``ProcessorMixin.get_attributes``)."""
    from transformers.processing_utils import ProcessorMixin

    return list(ProcessorMixin.get_attributes.__func__(cls))  # type: ignore[attr-defined]


@functools.cache
def without_video(cls: type) -> Any:
    """``cls`` (a ``ProcessorMixin`` subclass) built and loaded without its video processor.

    The subclass reports its attributes without the video one, so ``from_pretrained`` never loads
    a video processor; the family's ``__init__`` runs unchanged with ``video_processor=None``, and
    the ``None`` is dropped before ``ProcessorMixin.__init__`` checks the sub-processors. Built
    directly, it takes the same arguments as ``cls`` (pass ``video_processor=None`` where ``cls``
    requires one). A class without a video attribute is returned as is.
    """
    from transformers.processing_utils import ProcessorMixin

    declared = _declared_attributes(cls)
    if not any(_is_video(a) for a in declared):
        return cls

    kept = [a for a in declared if not _is_video(a)]

    class _DropVideo(ProcessorMixin):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            named = dict(zip(declared, args, strict=False))
            named.update(kwargs)
            ProcessorMixin.__init__(
                self, **{k: v for k, v in named.items() if not (_is_video(k) and v is None)}
            )
            for attribute in declared:
                if _is_video(attribute) and getattr(self, attribute, None) is None:
                    setattr(self, attribute, NoVideoProcessor())

    def from_args_and_dict(sub: type, args: Any, processor_dict: Any, **kwargs: Any) -> Any:
        # ``from_pretrained`` loads the kept sub-processors in order; the family's ``__init__`` takes
        # them by position with the video one among them (first for LLaVA-NeXT-Video): put None there.
        given = dict(zip(kept, args, strict=True))
        full = [given.get(attribute) for attribute in declared]
        return super(new_cls, sub).from_args_and_dict(full, processor_dict, **kwargs)

    def from_dict(sub: type, processor_dict: Any, **kwargs: Any) -> Any:
        # transformers 5.25 on: ``from_pretrained`` resolves the kept sub-processors into the dict and
        # builds the class from keywords; the family's ``__init__`` still requires the video one.
        filled = {**processor_dict, **{a: None for a in declared if _is_video(a) and a not in processor_dict}}
        return super(new_cls, sub).from_dict(filled, **kwargs)

    def get_attributes(_: type) -> list[str]:
        return list(kept)

    def to_dict(self: Any) -> dict[str, Any]:
        # The stand-in video part is not saved (a saved folder reads as the stock processor's).
        out = super(new_cls, self).to_dict()
        return {k: v for k, v in out.items() if not isinstance(v, NoVideoProcessor)}

    # Same name as the family's class: saved configs and messages read as the stock processor.
    new_cls: Any = type(
        cls.__name__,
        (cls, _DropVideo),
        {
            "from_args_and_dict": classmethod(from_args_and_dict),
            "from_dict": classmethod(from_dict),
            "get_attributes": classmethod(get_attributes),
            "to_dict": to_dict,
            "__module__": cls.__module__,
            "__doc__": cls.__doc__,
        },
    )
    return new_cls


def _named_processor_class(folder: Path) -> str | None:
    for name in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
        path = folder / name
        if path.is_file():
            value = load_file(path).get("processor_class")
            if isinstance(value, str):
                return value
    return None


def processor_class(folder: Path, model_type: str) -> type | None:
    """The processor class a model folder names, else the one registered for ``model_type``."""
    from transformers.models.auto.processing_auto import (
        PROCESSOR_MAPPING_NAMES,
        processor_class_from_name,
    )

    name = _named_processor_class(folder) or PROCESSOR_MAPPING_NAMES.get(model_type)
    if name is None:
        return None
    cls = processor_class_from_name(name)
    return cls if inspect.isclass(cls) else None


def load_processor(folder: Path, trust_remote_code: bool, model_type: str) -> Any:
    """The model's processor, without a video part (see module doc).

    Remote-code processors (``auto_map``) and folders naming no known class go through
    ``AutoProcessor``.
    """
    from transformers import AutoProcessor

    cls = None if _has_remote_processor(folder) else processor_class(folder, model_type)
    if cls is None:
        return AutoProcessor.from_pretrained(folder, trust_remote_code=trust_remote_code)
    return without_video(cls).from_pretrained(folder, trust_remote_code=trust_remote_code)


def _has_remote_processor(folder: Path) -> bool:
    for name in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
        path = folder / name
        if path.is_file() and "AutoProcessor" in (load_file(path).get("auto_map") or {}):
            return True
    return False
