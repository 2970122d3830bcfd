"""The options of an evaluation run, written once: type, default, help and choices per field.

:class:`RunConfig` is the one source. The ``mmspubench eval`` parser is generated from its fields
(:func:`add_arguments`), :meth:`RunConfig.validate` is the one check, and results.json's
``config`` section is :meth:`RunConfig.to_json` (the fields marked ``recorded``). Adding an option
is adding a field here with :func:`option`: the flag, its help, its check and (if recorded) its
place in results.json follow.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config_checks import check_fields
from mmspubench.eval.prompts import CGLA_VARIANTS, STANDARD, VARIANTS

Metric = Literal["accuracy", "cgla"]
AnswerMode = Literal["generate", "logprob"]
ScorerName = Literal["plain", "fast"]
CoreReduction = Literal["best", "mean", "first"]
DtypeName = Literal["float32", "bfloat16", "float16"]

METRICS: tuple[str, ...] = get_args(Metric)
"""The metrics a run can compute, in the order they are run."""
ANSWER_MODES: tuple[str, ...] = get_args(AnswerMode)
SCORERS: tuple[str, ...] = get_args(ScorerName)
CORE_REDUCTIONS: tuple[str, ...] = get_args(CoreReduction)
DTYPES: tuple[str, ...] = get_args(DtypeName)
UnknownKeyPolicy = Literal["error", "ignore"]
UNKNOWN_KEY_POLICIES: tuple[str, ...] = get_args(UnknownKeyPolicy)
BackendName = Literal["transformers", "vllm", "openai"]
BACKENDS: tuple[str, ...] = get_args(BackendName)
MAX_SEED = 2**32 - 1
"""Largest ``--seed`` (numpy's legacy seed range, so a seed means the same to every reader)."""
MAX_BATCH_SIZE = 65536
"""Largest ``--batch-size`` (a chunk holds its items' images in memory at once)."""
MAX_NEW_TOKENS = 4096
"""Largest ``--max-new-tokens`` (the answer is one letter; the parser reads the start)."""


def parse_metrics(text: str) -> tuple[str, ...]:
    """``accuracy,cgla`` -> the metrics in canonical order; unknown names are an error."""
    names = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(names - set(METRICS))
    if unknown or not names:
        raise MMSpuBenchError(f"--metrics {text!r}: expected a comma-separated subset of {','.join(METRICS)}")
    return tuple(m for m in METRICS if m in names)


def option(
    default: Any,
    help: str,
    *,
    choices: Sequence[str] | None = None,
    cli_choices: bool = True,
    parse: Callable[[str], Any] | None = None,
    arg_type: Callable[[str], Any] | None = None,
    recorded: bool = True,
    identity: bool = True,
    cli: bool = True,
    added_later: bool = False,
    identity_when_set: bool = False,
    default_factory: Callable[[], Any] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    expect: str | None = None,
) -> Any:
    """A :class:`RunConfig` field with what the parser, the check and results.json need.

    ``choices``: allowed values (checked by ``validate``; given to argparse unless ``cli_choices``
    is false, for options whose error line predates the generated parser). ``parse``: turns the
    command-line text into the value (e.g. the metrics list). ``arg_type``: argparse ``type``.
    ``recorded``: written into results.json's ``config``; ``identity``: a resumed run must match it
    (speed-only options such as the device are not). ``cli``: has a command-line flag.
    ``added_later``: a recorded option that results files written before it existed lack; reading
    such a file gives the default (the options of the first release are required).
    ``identity_when_set``: the option joins the run identity only when it differs from its default,
    so runs made before it existed keep their identity (and resume).
    ``minimum``/``maximum``: the range of a number, ``expect`` its wording in the error line
    (checked with every field's type by :mod:`mmspubench.eval.config_checks`).
    """
    meta = {
        "help": help,
        "choices": None if choices is None else tuple(choices),
        "cli_choices": cli_choices,
        "parse": parse,
        "arg_type": arg_type,
        "recorded": recorded,
        "identity": identity and recorded,
        "cli": cli,
        "added_later": added_later,
        "identity_when_set": identity_when_set,
        "minimum": minimum,
        "maximum": maximum,
        "expect": expect,
    }
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True, slots=True)
class RunConfig:
    """The options of one ``mmspubench eval`` run; the recorded ones are results.json's ``config``."""

    model: str | None = option(None, "Hub id or local folder (default: the bundled tiny model)")
    """Model as given by the user: Hub id or local folder (``None``: the bundled model)."""
    dataset: str | None = option(
        None, "Hub id, built folder or raw release (default: bundled synthetic release)"
    )
    """Dataset as given by the user: Hub id, built folder or raw release (``None``: bundled)."""
    split: str = option("test", "dataset split (default: test)")
    """Dataset split."""
    dataset_revision: str | None = option(
        None,
        "Hub dataset branch, tag or commit (default: main; the commit sha is recorded)",
        identity=False,
        added_later=True,
    )
    """Revision of a Hub ``--dataset``; ``None``: ``main``. results.json's ``dataset.revision`` holds the sha."""
    unknown_keys: UnknownKeyPolicy = option(
        "error",
        "raw release keys outside the key table: error (default) or ignore (as build's option)",
        choices=UNKNOWN_KEY_POLICIES,
        added_later=True,
    )
    """What a raw release's keys outside ``raw.KEY_TABLE`` do when the dataset is built for the run."""
    metrics: tuple[str, ...] = option(
        METRICS, "comma-separated subset of accuracy,cgla", choices=METRICS, parse=parse_metrics
    )
    """Subset of ``("accuracy", "cgla")``, in canonical order."""
    out: str | None = option(
        None, "run folder (default: runs/<model>-<UTC time>); rerun with it to resume", recorded=False
    )
    """Run folder; ``None``: ``runs/<model>-<UTC time>`` on the command line, no files from the API."""
    limit: int | None = option(
        None,
        "evaluate only the first N items (default: all)",
        arg_type=int,
        minimum=1,
        expect="a positive number of items",
    )
    """Evaluate only the first ``limit`` items (dataset order); ``None`` for all."""
    answer_mode: AnswerMode = option(
        "generate",
        "generate: greedy answer read by the parser; logprob: argmax of option-letter scores",
        choices=ANSWER_MODES,
    )
    """``generate`` (greedy answer + parser) or ``logprob`` (argmax of option-letter scores)."""
    scorer: ScorerName = option(
        "fast",
        "continuation scorer: fast shares the image and prompt prefix across conditions",
        choices=SCORERS,
        identity=False,
    )
    """Continuation scorer asked for: ``plain`` or ``fast`` (shared-prefix cache, where exact)."""
    batch_size: int | None = option(
        None,
        "items per chunk: per generate call and per score call (default: 8; vllm 256, openai 64)",
        arg_type=int,
        identity=False,
        minimum=1,
        maximum=MAX_BATCH_SIZE,
        expect=f"an integer from 1 to {MAX_BATCH_SIZE}",
    )
    """Items per runner chunk (``generate`` call, ``score`` call; the transformers adapter's sequences
    per forward); ``None``: the backend's default (:data:`mmspubench.eval.backends.DEFAULT_BATCH_SIZE`),
    resolved when the run starts, so results.json records the number used."""
    device: str = option("cpu", "torch device: cpu, cuda, cuda:1, mps (default: cpu)", identity=False)
    """Torch device, e.g. ``cpu`` or ``cuda``."""
    dtype: DtypeName = option(
        "float32", "float32, bfloat16 or float16 (default: float32)", choices=DTYPES, cli_choices=False
    )
    """Torch dtype the model runs in."""
    core_reduction: CoreReduction = option(
        "best",
        "one CGL from several core attributes: best (max, default), mean, first",
        choices=CORE_REDUCTIONS,
    )
    """How the CGLs of several core attributes become one: ``best`` (max), ``mean`` or ``first``."""
    seed: int = option(
        0,
        "seed of the bootstrap intervals (default: 0)",
        arg_type=int,
        minimum=0,
        maximum=MAX_SEED,
        expect=f"an integer from 0 to {MAX_SEED}",
    )
    """Seed of the bootstrap confidence intervals."""
    max_new_tokens: int | None = option(
        None,
        "answer length in generate mode; 512 with --prompt-variant reasoning (default: 16)",
        arg_type=int,
        minimum=1,
        maximum=MAX_NEW_TOKENS,
        expect=f"positive, at most {MAX_NEW_TOKENS}",
    )
    """Generation length in ``generate`` mode; ``None``: the prompt variant's default, resolved when
    the run starts, so results.json records the number used."""
    trust_remote_code: bool = option(False, "allow a model's own code to run (default: off)", recorded=False)
    """Let a model's own code run (``AutoModel...(trust_remote_code=True)``)."""
    progress: bool = option(
        True, "hide the progress bars, the weights' loading bar too (default: shown)", recorded=False
    )
    """Show a progress bar (``--no-progress`` turns it off)."""
    backend: BackendName = option(
        "transformers",
        "engine: transformers (this process), vllm (vLLM's offline engine), openai (an "
        "OpenAI-compatible server; see --base-url)",
        choices=BACKENDS,
        identity=False,
        added_later=True,
    )
    """Engine that runs the model (``mmspubench.eval.backends``); results.json ``backend`` records
    its version and settings."""
    tensor_parallel_size: int | None = option(
        None,
        "vllm: GPUs one model is split across (default: 1)",
        arg_type=int,
        recorded=False,
        minimum=1,
        maximum=1024,
        expect="an integer from 1 to 1024",
    )
    """vLLM: ``tensor_parallel_size`` of ``vllm.LLM``."""
    engine_args: str | None = option(
        None, "vllm: JSON object of more vllm.LLM arguments, e.g. '{\"max_model_len\": 4096}'", recorded=False
    )
    """vLLM: a JSON object of further ``vllm.LLM`` keyword arguments."""
    base_url: str | None = option(
        None,
        "openai: server URL, e.g. http://127.0.0.1:8000/v1 (--model: the name it serves)",
        recorded=False,
    )
    """openai: base URL of the chat-completions server."""
    api_key_env: str = option(
        "OPENAI_API_KEY",
        "openai: NAME of the environment variable holding the API key, or none for a server "
        "that needs no key (default: OPENAI_API_KEY)",
        recorded=False,
    )
    """openai: name of the environment variable with the key (the key itself is never written)."""
    max_concurrency: int = option(
        8,
        "openai: requests in flight at once (default: 8)",
        arg_type=int,
        recorded=False,
        minimum=1,
        maximum=1024,
        expect="an integer from 1 to 1024",
    )
    """openai: requests in flight at once."""
    max_retries: int = option(
        5,
        "openai: retries after a 429, 5xx, timeout or lost connection (default: 5)",
        arg_type=int,
        recorded=False,
        minimum=0,
        maximum=100,
        expect="an integer from 0 to 100",
    )
    """openai: retries of a failed request (exponential backoff)."""
    request_timeout: float = option(
        120.0,
        "openai: seconds per request before it is retried (default: 120)",
        arg_type=float,
        recorded=False,
        minimum=0.001,
        maximum=86400,
        expect="a number of seconds from 0.001 to 86400",
    )
    """openai: timeout of one request in seconds."""
    prompt_variant: str = option(
        STANDARD,
        "multiple-choice prompt: "
        + "; ".join(f"{name}: {v.description}" for name, v in VARIANTS.items())
        + " (default: standard)",
        choices=tuple(VARIANTS),
        added_later=True,
        identity_when_set=True,
    )
    """Texts of the multiple-choice prompt (``mmspubench.eval.prompts.VARIANTS``); results files
    written before variants existed read as ``standard``."""
    cgla_prompt_variant: str = option(
        STANDARD,
        f"CGLA prompt g(t), the measurement: {', '.join(CGLA_VARIANTS)} (default: standard)",
        choices=CGLA_VARIANTS,
        added_later=True,
        identity_when_set=True,
    )
    """Texts of g(t); kept ``standard`` unless asked, whatever ``prompt_variant`` is."""
    prompts: Mapping[str, Any] = option(
        None,
        "prompt templates with their version",
        cli=False,
        default_factory=dict,
    )
    """Prompt templates with their version (``mmspubench.eval.prompts.prompt_spec()``)."""

    def validate(self) -> RunConfig:
        """The one check of every option that needs no model or data; returns ``self``.

        Every field's type and range (:func:`~mmspubench.eval.config_checks.check_fields`), the
        choices, then the engine options' consistency.
        """
        check_fields(self)
        for f in dataclasses.fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices is None or value is None:
                continue
            values = value if isinstance(value, tuple) else (value,)
            bad = [v for v in values if v not in choices]
            if bad or not values:
                raise MMSpuBenchError(
                    f"{flag(f.name)} {value!r}: unknown; expected one of {', '.join(choices)}"
                )
        _check_variant(self)
        from mmspubench.eval.backends import check_options, options_of

        check_options(options_of(self), self.model, self.metrics)
        return self

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of the recorded options (results.json ``config``)."""
        return {
            f.name: _jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.metadata["recorded"]
        }

    def identity(self) -> dict[str, Any]:
        """The options that change what a sample holds; a resumed run must match them exactly.

        Batch size, device and scorer are left out on purpose: they change speed, not the
        recorded figures beyond float noise, so a run may resume on another machine.
        """
        return {
            f.name: _jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.metadata["identity"]
            and not (f.metadata["identity_when_set"] and getattr(self, f.name) == f.default)
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> RunConfig:
        """Inverse of ``to_json`` (options not recorded take their defaults)."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.metadata["recorded"] and not (f.metadata["added_later"] and f.name not in obj):
                values[f.name] = _from_jsonable(f, obj[f.name])
        return cls(**values)


def _check_variant(config: RunConfig) -> None:
    """A variant that reads generated text needs ``generate`` mode for its accuracy."""
    needs_generate = VARIANTS[config.prompt_variant].generate_only and "accuracy" in config.metrics
    if needs_generate and config.answer_mode != "generate":
        raise MMSpuBenchError(
            f"--prompt-variant {config.prompt_variant} needs --answer-mode generate (the answer "
            f"follows the model's reasoning), got {config.answer_mode}"
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


def _from_jsonable(f: dataclasses.Field[Any], value: Any) -> Any:
    if value is None:
        return None
    default = f.default if f.default is not dataclasses.MISSING else None
    if isinstance(default, tuple):
        return tuple(str(v) for v in value)
    if f.name == "prompts":
        return dict(value)
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, int) or f.metadata["arg_type"] is int:
        return int(value)
    return str(value)


def flag(name: str) -> str:
    """The command-line flag of a field: ``batch_size`` -> ``--batch-size``."""
    return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One argparse option per command-line field of :class:`RunConfig`, in field order."""
    for f in dataclasses.fields(RunConfig):
        meta = f.metadata
        if not meta["cli"]:
            continue
        if isinstance(f.default, bool):
            if f.default:  # on by default: the flag turns it off
                parser.add_argument(
                    f"--no-{f.name.replace('_', '-')}",
                    dest=f.name,
                    action="store_false",
                    help=help_with_default(f),
                )
            else:
                parser.add_argument(flag(f.name), action="store_true", help=help_with_default(f))
            continue
        kwargs: dict[str, Any] = {"help": help_with_default(f), "default": _cli_default(f)}
        if meta["parse"] is not None:
            kwargs["default"] = ",".join(f.default) if isinstance(f.default, tuple) else f.default
        elif meta["choices"] is not None and meta["cli_choices"]:
            kwargs["choices"] = meta["choices"]
        if meta["arg_type"] is not None:
            kwargs["type"] = meta["arg_type"]
        parser.add_argument(flag(f.name), **kwargs)


def help_with_default(f: dataclasses.Field[Any]) -> str:
    """A field's help text, ending with its default when the text does not state it already."""
    text = str(f.metadata["help"])
    if "default" in text:
        return text
    default = _cli_default(f)
    shown = ",".join(default) if isinstance(default, tuple) else "none" if default is None else default
    return f"{text} (default: {shown})"


def _cli_default(f: dataclasses.Field[Any]) -> Any:
    return f.default if f.default is not dataclasses.MISSING else None


def from_args(args: argparse.Namespace) -> RunConfig:
    """The config of a parsed command line (text options parsed, then validated)."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(RunConfig):
        if not f.metadata["cli"]:
            continue
        value = getattr(args, f.name)
        parse = f.metadata["parse"]
        values[f.name] = parse(value) if parse is not None and isinstance(value, str) else value
    return RunConfig(**values).validate()


def with_options(config: RunConfig | None, options: Mapping[str, Any]) -> RunConfig:
    """``config`` (or the defaults) with ``options`` replaced; an unknown option name is an error."""
    names = {f.name for f in dataclasses.fields(RunConfig)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise MMSpuBenchError(
            f"unknown option(s) {', '.join(unknown)}; expected some of {', '.join(sorted(names))}"
        )
    values = dict(options)
    if isinstance(values.get("metrics"), str):
        values["metrics"] = parse_metrics(values["metrics"])
    elif values.get("metrics") is not None:
        values["metrics"] = tuple(values["metrics"])
    return dataclasses.replace(config or RunConfig(), **values).validate()
