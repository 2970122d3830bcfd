"""Load a vision-language model (Hub id or local folder) into the generic adapter.

Every failure the user can cause (a model that cannot be found, offline or not; a model without
image input or without a chat template; a bad device or dtype) is one :class:`MMSpuBenchError`
naming the model and what was expected. Remote code runs only with ``trust_remote_code=True``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval.backends.transformers.adapter import TransformersVLM
from mmspubench.eval.checkpoint import model_checks
from mmspubench.eval.checkpoint.hooks import FamilyHooks, hooks_for
from mmspubench.eval.checkpoint.hub import resolve_model
from mmspubench.eval.checkpoint.processors import check_image_model, load_processor, missing_package_error
from mmspubench.eval.config import RunConfig, check_values
from mmspubench.eval.protocol import ModelInfo


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
            raise missing_package_error(name, hooks.name, "model code", err) from None
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
    chat template, or a bad ``device``/``dtype``/``batch_size``/``scorer`` (checked by their
    :class:`~mmspubench.eval.config.RunConfig` fields, for callers that come without a run config).
    """
    check_values(dtype=dtype, scorer=scorer, batch_size=batch_size)
    return _load(str(model), model, device, dtype, batch_size, scorer, trust_remote_code, None)


def load_checked(config: RunConfig, device: str) -> TransformersVLM:
    """The model of a run whose config was built and checked once (``RunConfig.validate``)."""
    assert config.model is not None and config.batch_size is not None
    model = config.model
    return _load(
        model, model, device, config.dtype, config.batch_size, config.scorer, config.trust_remote_code, config
    )


def _load(
    name: str,
    model: str | Path,
    device: str,
    dtype: str,
    batch_size: int,
    scorer: str,
    trust_remote_code: bool,
    run: RunConfig | None,
) -> TransformersVLM:
    from mmspubench.eval.checkpoint.thinking import setting_for
    from transformers import AutoConfig

    torch_device, torch_dtype = torch_device_and_dtype(device, dtype)
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
    thinking = setting_for(processor, hooks, run, name)  # before the weights: a refusal is cheap
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
    return TransformersVLM(
        net, processor, hooks=hooks, info=info, batch_size=batch_size, scorer=scorer, thinking=thinking
    )
