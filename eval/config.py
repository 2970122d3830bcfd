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
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends import registry
from mmspubench.eval.backends.api_key import DEFAULT_KEY_ENV
from mmspubench.eval.backends.plugin import Backend
from mmspubench.eval.checkpoint.thinking import MODES as THINKING_MODES
from mmspubench.eval.checkpoint.thinking import THINKING_MAX_NEW_TOKENS, ThinkingMode
from mmspubench.eval.config_checks import check_field, check_fields
from mmspubench.eval.intervention_names import BUILTIN_NAMES, parse_names
from mmspubench.eval.prompts import CGLA_VARIANTS, STANDARD, VARIANTS
from mmspubench.eval.replies.judge import EXTRACTORS, JUDGE_PROMPT_VERSION, check_extract
from mmspubench.eval.views import registry as views_registry
from mmspubench.options import (
    add_fields,
    choices_of,
    did_you_mean,
    flag,
    help_with_default,
    option,
    values_of,
)

__all__ = [
    "RunConfig",
    "add_arguments",
    "check_values",
    "flag",
    "from_args",
    "help_with_default",
    "option",
    "with_options",
]

AnswerMode = Literal["generate", "logprob"]
ScorerName = Literal["plain", "fast"]
CoreReduction = Literal["best", "mean", "first"]
DtypeName = Literal["float32", "bfloat16", "float16"]
BlindImage = Literal["none", "grey"]

METRICS: tuple[str, ...] = views_registry.names()
"""The metrics (views) a run can compute, in the order they are run (:mod:`mmspubench.eval.views`);
``--metrics`` reads the registry itself, so a view registered later is a choice too."""
DEFAULT_METRICS: tuple[str, ...] = views_registry.paper()
"""The metrics of a run that names none (the paper's two)."""
BLIND_IMAGES: tuple[str, ...] = get_args(BlindImage)
ANSWER_MODES: tuple[str, ...] = get_args(AnswerMode)
SCORERS: tuple[str, ...] = get_args(ScorerName)
CORE_REDUCTIONS: tuple[str, ...] = get_args(CoreReduction)
DTYPES: tuple[str, ...] = get_args(DtypeName)
UnknownKeyPolicy = Literal["error", "ignore"]
UNKNOWN_KEY_POLICIES: tuple[str, ...] = get_args(UnknownKeyPolicy)
MAX_SEED = 2**32 - 1
"""Largest ``--seed`` (numpy's legacy seed range, so a seed means the same to every reader)."""
MAX_BATCH_SIZE = 65536
"""Largest ``--batch-size`` (a chunk holds its items' images in memory at once)."""
MAX_NEW_TOKENS = 32768
"""Largest ``--max-new-tokens`` (the answer is one letter, but a thinking model reasons first: the
Qwen3 model cards recommend 32,768 tokens of output)."""


def parse_metrics(text: str) -> tuple[str, ...]:
    """``accuracy,cgla`` -> the metrics in canonical order (a name given twice counts once); an
    unknown name is an error naming the closest metric."""
    known = views_registry.names()
    names = {part.strip() for part in text.split(",") if part.strip()}
    expected = f"expected a comma-separated subset of {','.join(known)}"
    unknown = sorted(names - set(known))
    if unknown:
        hint = did_you_mean(unknown[0], known)
        raise MMSpuBenchError(f"--metrics {text!r}: unknown metric {unknown[0]!r}{hint}; {expected}")
    if not names:
        raise MMSpuBenchError(f"--metrics {text!r}: {expected}")
    return tuple(m for m in known if m in names)


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
        DEFAULT_METRICS,
        "comma-separated subset of " + ",".join(METRICS) + " (default: accuracy,cgla); circular, "
        "blind, calibration and interventions need accuracy, calibration --answer-mode logprob",
        choices=views_registry.names,
        parse=parse_metrics,
    )
    """Subset of :data:`METRICS`, in canonical order."""
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
    scorer_check: int = option(
        1,
        "items whose scores the fast path (the fast scorer, a prefix cache) also computes the plain "
        "way, per process; a difference above 1e-4 stops the run (0: no check; default: 1)",
        arg_type=int,
        identity=False,
        added_later=True,
        minimum=0,
        maximum=MAX_BATCH_SIZE,
        expect=f"an integer from 0 to {MAX_BATCH_SIZE}",
    )
    """First items of each process whose fast-path scores are checked against the plain computation
    (:mod:`mmspubench.eval.scorer_check`); ``0`` turns the check off (recorded)."""
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
    per forward); ``None``: the backend's default (``Backend.default_batch_size``),
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
        "answer length in generate mode; 512 with --prompt-variant reasoning, "
        f"{THINKING_MAX_NEW_TOKENS} when the model thinks (default: 16)",
        arg_type=int,
        minimum=1,
        maximum=MAX_NEW_TOKENS,
        expect=f"positive, at most {MAX_NEW_TOKENS}",
    )
    """Generation length in ``generate`` mode; ``None``: the prompt variant's default, or
    :data:`~mmspubench.eval.checkpoint.thinking.THINKING_MAX_NEW_TOKENS` when the model thinks,
    resolved when the run starts, so results.json records the number used."""
    thinking: ThinkingMode = option(
        "auto",
        "thinking before the answer: auto (the model's own default), on or off (set through the "
        "chat template's enable_thinking, where it has one; docs/evaluate/thinking.md)",
        choices=THINKING_MODES,
        added_later=True,
        identity_when_set=True,
        recorded_when_set=True,
    )
    """``--thinking``: ``auto`` leaves the model's chat template as it is; ``on``/``off`` set its
    ``enable_thinking`` (a model that cannot switch is refused in one line when it loads).
    Recorded, and in the run's identity, only when not ``auto``: a run without it reads as ``auto``."""
    max_truncated: float = option(
        0.05,
        "in generate mode, the share of replies cut inside their reasoning (0 to 1) above which the "
        "run ends with a line on stderr saying to raise --max-new-tokens; the results are written "
        "and the exit code is 0 (default: 0.05)",
        arg_type=float,
        minimum=0.0,
        maximum=1.0,
        expect="a share from 0 to 1",
        identity=False,
        added_later=True,
        recorded_when_set=True,
    )
    """Share of truncated replies (``results.json`` ``replies.truncated`` over ``replies.n``) above
    which the run warns: it changes no figure, so it is not in the run's identity."""
    trust_remote_code: bool = option(False, "allow a model's own code to run (default: off)", recorded=False)
    """Let a model's own code run (``AutoModel...(trust_remote_code=True)``)."""
    progress: bool = option(
        True, "hide the progress bars, the weights' loading bar too (default: shown)", recorded=False
    )
    """Show a progress bar (``--no-progress`` turns it off)."""
    backend: str = option(
        "transformers",
        "engine: transformers (this process), vllm (vLLM's offline engine), openai (an "
        "OpenAI-compatible server; see --base-url)",
        choices=registry.names,
        identity=False,
        added_later=True,
    )
    """Engine that runs the model (``mmspubench.eval.backends.registry``); results.json ``backend``
    records its version and settings."""
    backend_options: Any = option(None, "the chosen backend's own options", cli=False, recorded=False)
    """The chosen backend's ``Options`` (its flags: ``--base-url``, ``--tensor-parallel-size``...);
    ``None`` given: that backend's defaults."""
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
    blind_image: BlindImage = option(
        "none",
        "what the blind baseline shows instead of the image: none (the text-only prompt) or grey "
        "(a mid-grey image of the same size, for a model that needs an image)",
        choices=BLIND_IMAGES,
        added_later=True,
        identity_when_set=True,
        recorded_when_set=True,
    )
    """The blind view's image: ``none`` (text-only chat path) or ``grey``; recorded only when ``grey``."""
    interventions: tuple[str, ...] = option(
        (),
        "with --metrics ...,interventions: the image interventions to ask each item under, "
        f"comma-separated: {', '.join(BUILTIN_NAMES)} (photometric, every position kept), cf:NAME "
        "(a counterfactual image every item of the dataset ships) or cf:* (each item's own); "
        f"default: {','.join(BUILTIN_NAMES)}",
        parse=parse_names,
        added_later=True,
        identity_when_set=True,
        recorded_when_set=True,
    )
    """Interventions asked (``mmspubench.eval.intervention_names``); empty unless the run computes
    ``interventions``, where an empty value is resolved to every built-in one."""
    extract: str = option(
        "parser",
        "generate mode: how answers are read: parser (the strict parser alone) or judge (then a judge "
        "model reads what the parser leaves unparsed: --judge-model, --judge-base-url) (default: parser)",
        choices=EXTRACTORS,
        added_later=True,
        identity_when_set=True,
        recorded_when_set=True,
    )
    """``parser`` or ``judge`` (:mod:`mmspubench.eval.replies.judge`); recorded only when ``judge``."""
    judge_model: str | None = option(
        None,
        "--extract judge: the judge's model name on --judge-base-url",
        added_later=True,
        identity_when_set=True,
        recorded_when_set=True,
    )
    """The judge model's name on its server (in the run's identity)."""
    judge_base_url: str | None = option(
        None,
        "--extract judge: the judge's OpenAI-compatible server URL, e.g. http://127.0.0.1:8001/v1 "
        "(recorded: no credential in it)",
        added_later=True,
        identity_when_set=True,
        recorded_when_set=True,
    )
    """The judge's chat-completions server (in the run's identity; a URL holding a credential is refused)."""
    judge_api_key_env: str = option(
        DEFAULT_KEY_ENV,
        "--extract judge: NAME of the environment variable holding the judge's API key, or none for a "
        f"server that needs no key (default: {DEFAULT_KEY_ENV})",
        recorded=False,
    )
    """Name of the variable with the judge's key (never the key; results.json's ``judge`` records the name)."""
    judge_prompt: str | None = option(
        None,
        "the judge prompt's version",
        cli=False,
        added_later=True,
        identity_when_set=True,
        recorded_when_set=True,
    )
    """The judge prompt's version, set with ``--extract judge`` (a resume under another prompt is refused)."""
    prompts: Mapping[str, Any] = option(
        None,
        "prompt templates with their version",
        cli=False,
        default_factory=dict,
    )
    """Prompt templates with their version (``mmspubench.eval.prompts.prompt_spec()``)."""

    def __post_init__(self) -> None:
        if self.extract == "judge" and self.judge_prompt is None:
            object.__setattr__(self, "judge_prompt", JUDGE_PROMPT_VERSION)
        if self.interventions == () and isinstance(self.metrics, tuple) and "interventions" in self.metrics:
            object.__setattr__(self, "interventions", BUILTIN_NAMES)
        # The chosen backend's defaults when none are given, or when those given are another
        # backend's defaults (``dataclasses.replace(config, backend=...)``); anything else is
        # left for validate() to name.
        plugin = registry.REGISTRY.get(self.backend) if isinstance(self.backend, str) else None
        given = self.backend_options
        if plugin is None or isinstance(given, plugin.options):
            return
        if given is None or _all_defaults(given):
            object.__setattr__(self, "backend_options", plugin.options())

    def plugin(self) -> Backend:
        """The chosen backend (one line if none is registered under its name)."""
        return registry.get_backend(self.backend)

    def validate(self) -> RunConfig:
        """The one check of every option that needs no model or data; returns ``self``.

        Every field's type and range (:func:`~mmspubench.eval.config_checks.check_fields`), the
        choices, then the chosen backend's options: theirs, and the backend's own checks.
        """
        check_fields(self)
        _check_choices(self)
        _check_variant(self)
        _check_views(self)
        plugin = self.plugin()
        if not isinstance(self.backend_options, plugin.options):
            _refuse_foreign_options(self.backend_options)
            raise MMSpuBenchError(
                f"--backend {self.backend}: its options are not {plugin.options.__qualname__}"
            )
        check_fields(self.backend_options)
        _check_choices(self.backend_options)
        plugin.check(self.backend_options, self)
        check_extract(self)
        return self

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of the recorded options (results.json ``config``)."""
        return {
            f.name: _jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.metadata["recorded"]
            and not (f.metadata["recorded_when_set"] and getattr(self, f.name) == f.default)
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


registry.reserve(f.name for f in dataclasses.fields(RunConfig))  # no backend may declare a run option


def _check_variant(config: RunConfig) -> None:
    """A variant that reads generated text needs ``generate`` mode for its accuracy."""
    needs_generate = VARIANTS[config.prompt_variant].generate_only and "accuracy" in config.metrics
    if needs_generate and config.answer_mode != "generate":
        raise MMSpuBenchError(
            f"--prompt-variant {config.prompt_variant} needs --answer-mode generate (the answer "
            f"follows the model's reasoning), got {config.answer_mode}"
        )


def _check_views(config: RunConfig) -> None:
    """What each view of the run needs (``accuracy``, an answer mode), then every view's own
    option checks (an option of a view the run does not compute is refused by its owner)."""
    for view in views_registry.in_run(config):
        if view.needs_accuracy and "accuracy" not in config.metrics:
            raise MMSpuBenchError(f"--metrics {','.join(config.metrics)}: {view.name} needs accuracy too")
        if view.answer_mode is not None and config.answer_mode != view.answer_mode:
            raise MMSpuBenchError(
                f"--metrics {view.name} needs --answer-mode {view.answer_mode}, got {config.answer_mode}"
            )
    for view in views_registry.VIEWS.values():
        view.check(config)


def check_values(**values: Any) -> None:
    """Check some options by their :class:`RunConfig` fields (type, range, choices), without a config."""
    fields = {f.name: f for f in dataclasses.fields(RunConfig)}
    hints = typing.get_type_hints(RunConfig)
    for name, value in values.items():
        check_field(fields[name], hints[name], value)
        choices = choices_of(fields[name])
        if choices is not None and value not in choices:
            raise MMSpuBenchError(f"{flag(name)} {value!r}: unknown; expected one of {', '.join(choices)}")


def _check_choices(config: Any) -> None:
    for f in dataclasses.fields(config):
        choices = choices_of(f)
        value = getattr(config, f.name)
        if choices is None or value is None:
            continue
        values = value if isinstance(value, tuple) else (value,)
        bad = [v for v in values if v not in choices]
        if bad or not values:
            raise MMSpuBenchError(f"{flag(f.name)} {value!r}: unknown; expected one of {', '.join(choices)}")


def _all_defaults(options: Any) -> bool:
    """Whether ``options`` is a backend's ``Options`` left at its defaults."""
    if not dataclasses.is_dataclass(options) or isinstance(options, type):
        return False
    return all(getattr(options, f.name) == f.default for f in dataclasses.fields(options))


def _refuse_foreign_options(options: Any) -> None:
    """One line for the first option given (not its default) that belongs to another backend."""
    if not dataclasses.is_dataclass(options):
        return
    owner = next((b for b in registry.REGISTRY.values() if isinstance(options, b.options)), None)
    for f in dataclasses.fields(options):
        if owner is not None and getattr(options, f.name) != f.default:
            raise MMSpuBenchError(f"{flag(f.name)} is used only with --backend {owner.name}")


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One argparse option per command-line field of :class:`RunConfig`, then each backend's options."""
    add_fields(parser, RunConfig)
    for plugin in registry.REGISTRY.values():
        add_fields(parser, plugin.options)


def from_args(args: argparse.Namespace) -> RunConfig:
    """The config of a parsed command line (text options parsed, then validated)."""
    values = values_of(RunConfig, args)
    for plugin in registry.REGISTRY.values():
        values.update(values_of(plugin.options, args))
    return with_options(None, values)


def with_options(config: RunConfig | None, options: Mapping[str, Any]) -> RunConfig:
    """``config`` (or the defaults) with ``options`` replaced; an unknown option name is an error.

    ``options`` may name the run's fields and any backend's options (``base_url=...``); a backend
    option given a value other than its default must belong to the chosen backend.
    """
    base = config or RunConfig()
    names = {f.name for f in dataclasses.fields(RunConfig)} - {"backend_options"}
    engine = {n: registry.owner_of(n) for n in options if n not in names}
    unknown = sorted(n for n, owner in engine.items() if owner is None)
    if unknown:
        known = names | {f.name for b in registry.REGISTRY.values() for f in dataclasses.fields(b.options)}
        raise MMSpuBenchError(
            f"unknown option(s) {', '.join(unknown)}; expected some of {', '.join(sorted(known))}"
        )
    values = {k: v for k, v in options.items() if k not in engine}
    if isinstance(values.get("metrics"), str):
        values["metrics"] = parse_metrics(values["metrics"])
    elif values.get("metrics") is not None:
        values["metrics"] = tuple(values["metrics"])
    if isinstance(values.get("interventions"), str):
        values["interventions"] = parse_names(values["interventions"])
    elif isinstance(values.get("interventions"), list):
        values["interventions"] = tuple(values["interventions"])
    backend = values.get("backend", base.backend)
    values["backend_options"] = _backend_options(base, backend, {n: options[n] for n in engine})
    return dataclasses.replace(base, **values).validate()


def _backend_options(base: RunConfig, backend: Any, given: Mapping[str, Any]) -> Any:
    """The options of ``backend``: ``base``'s (same backend) with ``given`` replaced. A value given
    for another backend's option is checked (type, range), then refused unless it is its default."""
    plugin = registry.REGISTRY.get(backend) if isinstance(backend, str) else None
    if plugin is None:
        return None  # validate() names the unknown backend
    current = base.backend_options if isinstance(base.backend_options, plugin.options) else plugin.options()
    own = {f.name: f for f in dataclasses.fields(plugin.options)}
    for name, value in given.items():
        if name in own:
            continue
        owner = registry.owner_of(name)
        assert owner is not None
        foreign = {f.name: f for f in dataclasses.fields(owner.options)}[name]
        check_field(foreign, typing.get_type_hints(owner.options)[name], value)
        if value != foreign.default:
            raise MMSpuBenchError(f"{flag(name)} is used only with --backend {owner.name}")
    return dataclasses.replace(current, **{n: v for n, v in given.items() if n in own})
