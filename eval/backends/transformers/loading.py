"""Load a vision-language model (Hub id or local folder) into the generic adapter.

Every failure the user can cause (a model that cannot be found, offline or not; a model without
image input or without a chat template; a bad device or dtype) is one :class:`MMSpuBenchError`
naming the model and what was expected. Remote code runs only with ``trust_remote_code=True``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.hub import has_path_syntax, hub_offline
from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval.backends.transformers.adapter import TransformersVLM
from mmspubench.eval.config import RunConfig
from mmspubench.eval.modelio import model_checks, prefix_lm
from mmspubench.eval.modelio.families import missing_package
from mmspubench.eval.modelio.hooks import FamilyHooks, hooks_for
from mmspubench.eval.protocol import ModelInfo

# Files a model folder needs; weights only as safetensors (pickled .bin weights are not loaded).
_HUB_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "*.model", "*.tiktoken", "*.txt"]


def check_safe_weights(folder: Path) -> None:
    """Refuse a model folder whose weights are only pickled ``.bin`` files (never unpickled here)."""
    if any(folder.glob("*.safetensors")) or not any(folder.glob("*.bin")):
        return
    raise MMSpuBenchError(
        f"model folder {str(folder)!r}: holds only pickled .bin weights; convert them to safetensors "
        "(transformers: model.save_pretrained(folder, safe_serialization=True))"
    )


def resolve_model(model: str | Path, trust_remote_code: bool = False) -> tuple[Path, str | None]:
    """Local folder of ``model`` and its Hub commit (``None`` for a local folder).

    A Hub id is fetched with ``huggingface_hub`` (or read from its cache when offline).
    """
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise MMSpuBenchError(
                f"model folder {str(path)!r}: has no config.json; expected a saved transformers model"
            )
        check_safe_weights(path)
        return path.resolve(), None
    if isinstance(model, Path) or has_path_syntax(model):
        raise MMSpuBenchError(
            f"model {str(model)!r}: no such folder; expected a local model folder or a Hub id"
        )
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import EntryNotFoundError, HFValidationError

    patterns = [*_HUB_PATTERNS, "*.py"] if trust_remote_code else _HUB_PATTERNS
    offline = hub_offline(datasets=False)
    try:
        folder = Path(snapshot_download(model, allow_patterns=patterns, local_files_only=offline))
    except HFValidationError as err:
        raise MMSpuBenchError(
            f"model {model!r}: not a valid Hub id or existing folder ({first_line(err)})"
        ) from None
    except (OSError, EntryNotFoundError) as err:  # offline, not found, gated, network: all "not available"
        why = (
            "the Hub is offline (HF_HUB_OFFLINE) and it is not in the local cache"
            if offline
            else f"{type(err).__name__}: {first_line(err)}"
        )
        raise MMSpuBenchError(
            f"model {model!r}: not found: no such local folder, and as a Hub id it could not be fetched "
            f"({why}); expected a local model folder or a Hub id of an image-text-to-text model"
        ) from None
    return folder, folder.name if folder.parent.name == "snapshots" else None


def check_image_model(name: str, config: Any, trust_remote_code: bool) -> None:
    from transformers import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING

    remote = trust_remote_code and "AutoModelForImageTextToText" in (getattr(config, "auto_map", None) or {})
    if type(config) not in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING and not remote:
        raise MMSpuBenchError(
            f"model {name!r}: model type {config.model_type!r} takes no image input "
            "(AutoModelForImageTextToText does not support it); expected a vision-language model"
        )


def _missing_package_error(name: str, family: str, part: str, err: BaseException) -> MMSpuBenchError:
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
    try:
        processor = hooks.load_processor(folder, trust_remote_code)
    except (ImportError, RecursionError) as err:
        raise _missing_package_error(name, hooks.name, "processor", err) from None
    except (OSError, ValueError, TypeError, KeyError) as err:
        if missing_package(err) is not None:  # e.g. "Missing optional dependencies: torchvision"
            raise _missing_package_error(name, hooks.name, "processor", err) from None
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


def torch_device_and_dtype(device: str, dtype: str) -> tuple[Any, Any]:
    """The torch device and dtype of the options; one line when the device does not exist here."""
    import torch

    try:
        dev = torch.device(device)
    except RuntimeError:
        raise MMSpuBenchError(
            f"--device {device!r}: not a torch device; expected e.g. cpu, cuda, cuda:1, mps"
        ) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise MMSpuBenchError(f"--device {device!r}: CUDA is not available on this machine; expected cpu")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise MMSpuBenchError(f"--device {device!r}: MPS is not available on this machine; expected cpu")
    return dev, getattr(torch, dtype)


def _load_weights(
    name: str, folder: Path, hooks: FamilyHooks, torch_dtype: Any, trust_remote_code: bool
) -> Any:
    """The network, or one line for weights that are missing, damaged or do not fit the config."""
    from safetensors import SafetensorError
    from transformers import AutoModelForImageTextToText

    with model_checks.held_load_report() as show_report:
        try:
            net = AutoModelForImageTextToText.from_pretrained(
                folder, dtype=torch_dtype, trust_remote_code=trust_remote_code
            )
        except (ImportError, RecursionError) as err:
            raise _missing_package_error(name, hooks.name, "model code", err) from None
        except (OSError, ValueError) as err:
            raise MMSpuBenchError(
                f"model {name!r}: its weights could not be loaded ({first_line(err)})"
            ) from None
        except (RuntimeError, SafetensorError) as err:  # damaged weights, shapes that do not fit
            known = model_checks.weights_error(name, err)
            if known is None:
                raise
            raise known from None
        show_report()
    return net


def load_model(
    model: str | Path,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    batch_size: int = 8,
    scorer: str = "fast",
    trust_remote_code: bool = False,
) -> TransformersVLM:
    """Load ``model`` (Hub id or local folder) into the generic adapter, in eval mode.

    Raises :class:`MMSpuBenchError` for an unknown id or folder, a model without image input or
    chat template, or a bad ``device``/``dtype``/``batch_size``/``scorer``.
    """
    from transformers import AutoConfig

    # The one check of these options (RunConfig.validate), for callers that come without a config.
    RunConfig(dtype=dtype, scorer=scorer, batch_size=batch_size).validate()
    torch_device, torch_dtype = torch_device_and_dtype(device, dtype)
    name = str(model)
    folder, revision = resolve_model(model, trust_remote_code)
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, KeyError) as err:
        hint = "" if trust_remote_code else " (if it needs its own code, pass --trust-remote-code)"
        raise MMSpuBenchError(
            f"model {name!r}: its config could not be read{hint}: {first_line(err)}"
        ) from None
    check_image_model(name, config, trust_remote_code)
    hooks = hooks_for(config.model_type)
    processor = load_processor(name, folder, hooks, trust_remote_code)
    model_checks.check_template(name, processor, hooks)
    model_checks.check_pad_token(name, processor)
    net = _load_weights(name, folder, hooks, torch_dtype, trust_remote_code)
    model_checks.check_vocabulary(name, net, processor)
    net = net.to(torch_device).eval()
    info = ModelInfo(
        id=name,
        path=str(folder),
        revision=revision,
        dtype=dtype,
        adapter=f"hf-image-text-to-text/{hooks.name}",
    )
    return TransformersVLM(net, processor, hooks=hooks, info=info, batch_size=batch_size, scorer=scorer)
