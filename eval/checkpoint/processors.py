"""A model's processor, built with its family's hooks and checked: image processor, tokenizer, chat template.

Every failure is one :class:`MMSpuBenchError` naming the model (and the pip package a family needs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval.checkpoint import prefix_lm
from mmspubench.eval.checkpoint.families import missing_package
from mmspubench.eval.checkpoint.hooks import FamilyHooks


def check_image_model(name: str, config: Any, trust_remote_code: bool) -> None:
    """Refuse a config whose model takes no image (not an image-text-to-text model, nor remote code declaring one)."""
    from transformers import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING

    remote = trust_remote_code and "AutoModelForImageTextToText" in (getattr(config, "auto_map", None) or {})
    if type(config) not in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING and not remote:
        raise MMSpuBenchError(
            f"model {name!r}: model type {config.model_type!r} takes no image input "
            "(AutoModelForImageTextToText does not support it); expected a vision-language model"
        )


def missing_package_error(name: str, family: str, part: str, err: BaseException) -> MMSpuBenchError:
    """One line naming the family and the pip package an ImportError/RecursionError points to."""
    package = missing_package(err)
    if package is None:
        return MMSpuBenchError(
            f"model {name!r} (family {family}): its {part} could not be loaded: a package it needs is missing "
            f"or broken ({type(err).__name__}: {first_line(err)[:200]})"
        )
    return MMSpuBenchError(
        f"model {name!r} (family {family}): its {part} needs the Python package {package!r}, which is not "
        f"installed; install it with: pip install {package}"
    )


def load_processor(name: str, folder: Path, hooks: FamilyHooks, trust_remote_code: bool) -> Any:
    """The family's processor of ``folder`` with an image processor, a tokenizer and a chat template
    (PaliGemma's plain prompt format where it ships none); one line for anything missing."""
    try:
        processor = hooks.load_processor(folder, trust_remote_code)
    except (ImportError, RecursionError) as err:
        raise missing_package_error(name, hooks.name, "processor", err) from None
    except (OSError, ValueError, TypeError, KeyError) as err:
        if missing_package(err) is not None:  # e.g. "Missing optional dependencies: torchvision"
            raise missing_package_error(name, hooks.name, "processor", err) from None
        raise MMSpuBenchError(
            f"model {name!r}: its processor could not be loaded ({first_line(err)})"
        ) from None
    if getattr(processor, "image_processor", None) is None or getattr(processor, "tokenizer", None) is None:
        raise MMSpuBenchError(
            f"model {name!r}: its processor ({type(processor).__name__}) has no image processor or no "
            "tokenizer; expected a vision-language processor"
        )
    if not getattr(processor, "chat_template", None) and prefix_lm.is_prefix_lm(processor):
        processor.chat_template = prefix_lm.plain_prompt_template(processor)  # PaliGemma: its own format
    if not getattr(processor, "chat_template", None):
        raise MMSpuBenchError(
            f"model {name!r}: has no chat template (none in the processor or tokenizer files); expected "
            "an instruction-tuned model with a chat template"
        )
    return processor
