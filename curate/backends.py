"""The three annotation backends, each holding the model's answer to a JSON schema.

- ``transformers``: eval's model loading (:func:`mmspubench.eval.backends.transformers.loading.load_model`: local folder
  or Hub id, image support and chat template checked) and ``xgrammar``'s logits processor for
  constrained decoding during ``generate``;
- ``vllm``: eval's vLLM engine (:func:`mmspubench.eval.backends.vllm.engine.load_vllm`: the prompt
  rendered and tokenized as for transformers) with structured outputs
  (``StructuredOutputsParams(json=schema)``);
- ``openai``: any OpenAI-compatible server, ``response_format`` of type ``json_schema`` (strict);
  the image goes as eval's OpenAI backend sends it (a base64 PNG data URL), the key is read as
  eval reads it (:mod:`mmspubench.eval.backends.api_key`: a variable's name, ``none`` for no key),
  the answer is checked as eval checks it (:func:`~mmspubench.eval.backends.openai.server_answers.answer_text`)
  and the server's error text is cleaned (:func:`mmspubench.redact.clean`: no key, no escapes).

Both local backends render the request with the model's chat template exactly as eval does
(:func:`chat_prompt`), so a draft does not depend on the engine that wrote it.

The first attempt decodes greedily; retries sample (temperature 1, seeded) so they can differ.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mmspubench.errors import MMSpuBenchError
from mmspubench.redact import clean, redact

if TYPE_CHECKING:
    from mmspubench.eval.protocol import ChatPrompt
    from PIL.Image import Image

BACKENDS = ("transformers", "vllm", "openai")


@dataclass(frozen=True, slots=True)
class Request:
    """One structured request: the candidate's image and the chat texts."""

    image: Image
    system: str
    user: str


class Annotator(Protocol):
    """A model that answers requests with text held to a JSON schema."""

    info: dict[str, Any]
    """Backend, model, versions: written into provenance."""

    def answer(self, requests: Sequence[Request], schema: dict[str, Any], attempt: int) -> list[str]:
        """One raw answer per request (``attempt`` 0 is greedy, later ones sample)."""
        ...


def _missing(extra: str, package: str) -> MMSpuBenchError:
    return MMSpuBenchError(
        f"the {extra} backend needs the package {package!r}: pip install 'mm-spubench[curate]'"
    )


def chat_prompt(request: Request) -> ChatPrompt:
    """The request as eval's prompt type (the model's chat template renders it, image first)."""
    from mmspubench.eval.protocol import ChatPrompt

    return ChatPrompt(system=request.system, user_text=request.user, assistant_prefix="")


class TransformersAnnotator:
    """A transformers vision-language model with xgrammar constrained decoding."""

    def __init__(self, model: str, *, device: str, max_new_tokens: int, seed: int) -> None:
        from mmspubench.eval.backends.transformers.loading import load_model

        try:
            import xgrammar
        except ModuleNotFoundError:
            raise _missing("transformers", "xgrammar") from None
        self.vlm = load_model(model, device=device)
        tokenizer = self.vlm.processor.tokenizer
        vocab = self.vlm.model.config.get_text_config().vocab_size
        eos = self.vlm.model.generation_config.eos_token_id
        self.stop = sorted(
            {*(eos if isinstance(eos, list) else [eos] if eos is not None else []), tokenizer.eos_token_id}
        )
        info = xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab, stop_token_ids=self.stop)
        self.compiler = xgrammar.GrammarCompiler(info)
        self.max_new_tokens, self.seed = max_new_tokens, seed
        self.info = {
            "backend": "transformers",
            "model": model,
            "revision": self.vlm.info.revision,
            "constrained_decoding": f"xgrammar {_version('xgrammar')}",
        }

    def answer(self, requests: Sequence[Request], schema: dict[str, Any], attempt: int) -> list[str]:
        import torch
        from mmspubench.eval.checkpoint.encoding import to_model
        from xgrammar.contrib.hf import LogitsProcessor

        grammar = self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)
        answers = []
        for request in requests:
            context = self.vlm.render(chat_prompt(request))
            inputs = self.vlm.processor(
                images=[[request.image]],
                text=[context],
                return_tensors="pt",
                add_special_tokens=self.vlm.add_special_tokens_for(context),
            )
            sampling = (
                {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
                if attempt
                else {"do_sample": False}
            )
            with torch.random.fork_rng(devices=[]), torch.inference_mode():
                torch.manual_seed(self.seed + attempt)
                out = self.vlm.model.generate(
                    **to_model(inputs, self.vlm.model),
                    max_new_tokens=self.max_new_tokens,
                    logits_processor=[LogitsProcessor(grammar)],
                    eos_token_id=self.stop,
                    pad_token_id=self.vlm.pad_token_id,
                    **sampling,
                )
            new = out[0, inputs["input_ids"].shape[1] :]
            answers.append(self.vlm.processor.tokenizer.decode(new, skip_special_tokens=True))
        return answers


def chat_messages(request: Request) -> list[dict[str, Any]]:
    """OpenAI-style messages: system, then the user turn holding the image then the text."""
    from mmspubench.eval.backends.openai.client import data_url

    return [
        {"role": "system", "content": request.system},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": data_url(request.image)}},
                {"type": "text", "text": request.user},
            ],
        },
    ]


class OpenAIAnnotator:
    """An OpenAI-compatible chat server, answers held by ``response_format`` json_schema (strict)."""

    def __init__(
        self, model: str, *, base_url: str | None, api_key_env: str, max_new_tokens: int, seed: int
    ) -> None:
        try:
            import openai
        except ModuleNotFoundError:
            raise _missing("openai", "openai") from None
        from mmspubench.eval.backends.api_key import read_api_key

        self.openai = openai
        key = read_api_key(api_key_env)
        self.client: Any = openai.OpenAI(base_url=base_url, api_key=key, max_retries=2, timeout=600)
        self.model, self.max_new_tokens, self.seed = model, max_new_tokens, seed
        self.info = {
            "backend": "openai",
            "model": model,
            "base_url": redact(base_url) if base_url else None,
            "client": f"openai {openai.__version__}",
        }

    def answer(self, requests: Sequence[Request], schema: dict[str, Any], attempt: int) -> list[str]:
        from mmspubench.eval.backends.openai.server_answers import answer_text

        fmt = {
            "type": "json_schema",
            "json_schema": {"name": "mmspubench_item", "schema": schema, "strict": True},
        }
        answers = []
        for request in requests:
            try:
                reply = self.client.chat.completions.create(
                    model=self.model,
                    messages=chat_messages(request),
                    response_format=fmt,
                    temperature=1.0 if attempt else 0.0,
                    seed=self.seed + attempt,
                    max_tokens=self.max_new_tokens,
                )
            except self.openai.BadRequestError as err:
                raise MMSpuBenchError(
                    f"--model {self.model!r}: the server refused the request ({_first_line(err)}); "
                    "expected a vision-language model that takes images and json_schema response formats"
                ) from None
            except self.openai.APIError as err:
                raise MMSpuBenchError(
                    f"--base-url {redact(str(self.client.base_url))}: {type(err).__name__}: {_first_line(err)}"
                ) from None
            answers.append(answer_text(reply))
        return answers


def _first_line(err: BaseException, limit: int = 300) -> str:
    """The server's message, cleaned (:func:`mmspubench.redact.clean`) and bounded."""
    text = clean(str(err)).strip()
    return text.splitlines()[0][:limit] if text else type(err).__name__


class VLLMAnnotator:
    """eval's vLLM engine; all requests of one attempt go to ``LLM.generate`` at once."""

    def __init__(self, model: str, *, max_new_tokens: int, seed: int) -> None:
        from mmspubench.eval.backends import vllm
        from mmspubench.eval.backends.vllm.engine import load_vllm
        from mmspubench.eval.checkpoint.hub import resolve_model
        from mmspubench.eval.checkpoint.processors import check_image_model
        from transformers import AutoConfig

        folder, _ = resolve_model(model)
        check_image_model(model, AutoConfig.from_pretrained(folder), False)
        options = vllm.Options(engine_args=json.dumps({"seed": seed}))
        self.engine = load_vllm(model, options, dtype="float32", trust_remote_code=False)
        self.max_new_tokens, self.seed = max_new_tokens, seed
        self.info: dict[str, Any] = {
            "backend": "vllm",
            "model": model,
            "revision": self.engine.info.revision,
            "engine": self.engine.backend_info,
        }

    def close(self) -> None:
        """Stop the engine's processes (:meth:`~mmspubench.eval.backends.vllm.engine.VLLMModel.close`)."""
        self.engine.close()

    def answer(self, requests: Sequence[Request], schema: dict[str, Any], attempt: int) -> list[str]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        params = SamplingParams(
            max_tokens=self.max_new_tokens,
            temperature=1.0 if attempt else 0.0,
            seed=self.seed + attempt,
            structured_outputs=StructuredOutputsParams(json=schema),
            detokenize=False,
        )
        engine = self.engine
        prompts = [engine.prompt(r.image, engine.render(chat_prompt(r))) for r in requests]
        outputs = engine.llm.generate(prompts, params, use_tqdm=False)
        tokens = [list(o.outputs[0].token_ids) for o in outputs]
        return list(engine.processor.batch_decode(tokens, skip_special_tokens=True))


def open_annotator(
    backend: str,
    model: str,
    *,
    base_url: str | None,
    api_key_env: str,
    device: str,
    max_new_tokens: int,
    seed: int,
) -> Annotator:
    """The backend's annotator, with the model loaded (every failure one :class:`MMSpuBenchError`)."""
    from mmspubench.eval.backends.api_key import check_key_env

    check_key_env(api_key_env)  # every backend: the draft's provenance records it as a name
    if backend == "transformers":
        return TransformersAnnotator(model, device=device, max_new_tokens=max_new_tokens, seed=seed)
    if backend == "openai":
        return OpenAIAnnotator(
            model, base_url=base_url, api_key_env=api_key_env, max_new_tokens=max_new_tokens, seed=seed
        )
    if backend == "vllm":
        return VLLMAnnotator(model, max_new_tokens=max_new_tokens, seed=seed)
    raise MMSpuBenchError(f"--backend {backend!r}: unknown; expected one of {', '.join(BACKENDS)}")


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"
