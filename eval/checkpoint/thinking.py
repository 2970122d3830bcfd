"""``--thinking``: whether a model thinks before it answers, whether the run can switch it, and how.

What a model does is read from its own chat template, not from a list of names: a template that
reads ``enable_thinking`` (Qwen3, Qwen3.5, GLM-4.5V/4.6V, InternVL3.5's Qwen3-based templates) is
rendered with the switch on, off and unset, and the three texts say whether it switches and what
it does when not told. A template without the switch thinks when its generation prompt opens a
reasoning block (Qwen3-VL-*-Thinking writes ``<think>``), when it writes Kimi-VL's ``◁think▷``
markers, or when the model's name says ``Thinking`` (Kimi-VL-A3B-Thinking's template opens nothing);
such a model cannot switch, and asking it for the other mode is one line naming its family.

Scored prompts (CGL, ``logprob`` answers) are rendered with thinking off where the template can
switch it (``enable_thinking=False``: the template writes its empty reasoning block, as the model's
own non-thinking turns look); a model that always thinks has no such rendering and is refused.
The page docs/evaluate/thinking.md says the same for users.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from mmspubench.errors import MMSpuBenchError

ThinkingMode = Literal["auto", "on", "off"]
MODES: tuple[str, ...] = get_args(ThinkingMode)
"""The ``--thinking`` choices: ``auto`` (the model's own default), ``on``, ``off``."""
KWARG = "enable_thinking"
"""The chat-template keyword that switches thinking."""
SET_BY_KWARG = f"chat_template_kwargs:{KWARG}"
"""``model.thinking.set_by`` when the run set the switch."""
SET_BY_DEFAULT = "model default"
"""``model.thinking.set_by`` when the model did what it does unasked."""
THINKING_MAX_NEW_TOKENS = 8192
"""Default ``--max-new-tokens`` of a run whose model thinks (docs/evaluate/thinking.md gives the
families' own figures it is taken from)."""
OPENERS = ("<think>", "◁think▷")
"""Reasoning-block openers a generation prompt may end in (the reply then starts inside it)."""
_PROBE = [{"role": "user", "content": [{"type": "text", "text": "probe"}]}]


@dataclass(frozen=True, slots=True)
class TemplateThinking:
    """What a chat template does about thinking."""

    switchable: bool
    """It reads ``enable_thinking`` and its rendering changes with it."""
    thinks: bool
    """The model thinks when not told (its own default)."""
    empty_block: str = ""
    """What ``enable_thinking=False`` adds after the generation prompt (the empty reasoning block)."""


def of_template(
    render: Callable[[Mapping[str, Any]], str], template: str | None, name: str
) -> TemplateThinking:
    """What the chat template ``template`` does, ``render(kwargs)`` rendering a one-turn probe chat
    with its generation prompt; ``name``: the model as given (the ``Thinking`` naming rule)."""
    text = template or ""
    if KWARG in text:
        unset, on, off = render({}), render({KWARG: True}), render({KWARG: False})
        if on != off:
            block = off[len(on) :] if off.startswith(on) else ""
            return TemplateThinking(True, unset == on, block)
    opens = render({}).rstrip().endswith(OPENERS)
    return TemplateThinking(False, opens or "◁think▷" in text or _named_thinking(name))


def _named_thinking(name: str) -> bool:
    """The naming rule: the model's last path part says ``Thinking`` (Kimi-VL-A3B-Thinking)."""
    return "thinking" in name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()


def template_renderer(template: str) -> Callable[[Mapping[str, Any]], str]:
    """``render(kwargs)`` of :func:`of_template` for a template's text (before any model loads)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    def render(kwargs: Mapping[str, Any]) -> str:
        # annotated as a str, it returns (rendered chats, generation indices)
        found: Any = render_jinja_template(
            [_PROBE], chat_template=template, add_generation_prompt=True, **kwargs
        )
        return str(found[0][0])

    return render


def processor_renderer(processor: Any, hooks: Any) -> Callable[[Mapping[str, Any]], str]:
    """``render(kwargs)`` of :func:`of_template` through a loaded processor's chat template, as the
    run's prompts are rendered (:func:`~mmspubench.eval.checkpoint.chat.render_chat`)."""
    from mmspubench.eval.checkpoint.chat import render_chat
    from mmspubench.eval.protocol import ChatPrompt

    probe = ChatPrompt(system="", user_text="probe", assistant_prefix="")
    return lambda kwargs: render_chat(processor, hooks, probe, kwargs)


@dataclass(frozen=True, slots=True)
class ThinkingSetting:
    """How a run renders its prompts for ``--thinking``, and what results.json records of it."""

    mode: str
    """What the model does in generate mode: ``on`` (thinks) or ``off``."""
    set_by: str
    """How: :data:`SET_BY_KWARG` or :data:`SET_BY_DEFAULT`."""
    answered: Mapping[str, bool] = field(default_factory=dict)
    """Chat-template keywords of the prompts the model answers (generate mode)."""
    scored: Mapping[str, bool] | None = field(default_factory=dict)
    """Chat-template keywords of scored prompts (CGL, ``logprob``); ``None``: no faithful rendering."""
    recorded: bool = True
    """Whether results.json records it (not for a model that neither thinks nor switches, run
    under ``auto``: its files stay as before thinking was known)."""

    def record(self) -> dict[str, Any]:
        """results.json's ``model.thinking``."""
        scored = "none" if self.scored is None else _kwargs_text(self.scored)
        return {"mode": self.mode, "set_by": self.set_by, "scored_rendering": scored}

    def kwargs_for(self, scored: bool) -> Mapping[str, bool]:
        """The chat-template keywords of a prompt (``scored``: a CGL or ``logprob`` prompt)."""
        if not scored:
            return self.answered
        return self.scored or {}


NOT_THINKING = ThinkingSetting("off", SET_BY_DEFAULT, recorded=False)
"""A model that neither thinks nor switches, run under ``auto``."""


def _kwargs_text(kwargs: Mapping[str, bool]) -> str:
    if not kwargs:
        return "chat template as is"
    return ", ".join(f"{k}={str(v).lower()}" for k, v in kwargs.items())


def resolve(asked: str, template: TemplateThinking, name: str, family: str) -> ThinkingSetting:
    """The setting of a run asking ``asked`` of a model whose template does ``template``; asking a
    mode the model cannot give is one line naming the model and its family."""
    if template.switchable:
        scored = {KWARG: False}
        if asked == "auto":
            return ThinkingSetting("on" if template.thinks else "off", SET_BY_DEFAULT, {}, scored)
        return ThinkingSetting(asked, SET_BY_KWARG, {KWARG: asked == "on"}, scored)
    mode = "on" if template.thinks else "off"
    if asked not in ("auto", mode):
        does = "always thinks" if template.thinks else "does not think"
        raise MMSpuBenchError(
            f"--thinking {asked}: {name} (family {family}) {does} and its chat template has no "
            f"{KWARG} switch; run with --thinking auto"
        )
    if not template.thinks and asked == "auto":
        return NOT_THINKING
    return ThinkingSetting(mode, SET_BY_DEFAULT, {}, None if template.thinks else {})


def server_setting(asked: str) -> ThinkingSetting:
    """The setting of an OpenAI-compatible server's model, whose chat template is unseen: ``auto``
    sends nothing; ``on``/``off`` send ``chat_template_kwargs`` (scoring requests: thinking off)."""
    if asked == "auto":
        return NOT_THINKING
    return ThinkingSetting(asked, SET_BY_KWARG, {KWARG: asked == "on"}, {KWARG: False})


def check_scoring(setting: ThinkingSetting, config: Any, name: str, family: str) -> None:
    """A run that scores prompts (CGLA, ``logprob`` answers) needs a faithful rendering of them: one
    line for a model that always thinks (no thinking-off turn of its own to score after)."""
    scores = "cgla" in config.metrics or config.answer_mode == "logprob"
    if setting.scored is not None or not scores:
        return
    what = "--answer-mode logprob" if config.answer_mode == "logprob" else "--metrics cgla"
    raise MMSpuBenchError(
        f"{what}: {name} (family {family}) always thinks and its chat template cannot switch thinking "
        "off, so no scored prompt is one the model writes itself; run with --answer-mode generate "
        "--metrics accuracy"
    )


def setting_for(processor: Any, hooks: Any, run: Any, name: str) -> ThinkingSetting:
    """The setting of a loaded processor's chat template (transformers and vLLM engines, ``hooks``
    the family's) for the run
    ``run`` (its ``--thinking``; its scored prompts checked, :func:`check_scoring`); ``run`` ``None``:
    the model's own default, nothing checked (a model loaded outside a run)."""
    from jinja2 import TemplateError

    template = getattr(processor, "chat_template", None)
    template = template if isinstance(template, str) else None
    try:
        found = of_template(processor_renderer(processor, hooks), template, name)
    except (TemplateError, TypeError, ValueError, KeyError):  # a template that needs an image
        found = TemplateThinking(False, _named_thinking(name) or "◁think▷" in (template or ""))
    setting = resolve("auto" if run is None else run.thinking, found, name, hooks.name)
    if run is not None:
        check_scoring(setting, run, name, hooks.name)
    return setting


def thinks_before_loading(config: Any) -> bool:
    """Whether the model of a run thinks in generate mode, known before it loads (its default
    ``--max-new-tokens``): ``--thinking on``/``off`` say so; under ``auto`` its chat template's files
    say it (a local folder, or those files of a Hub repository)."""
    if config.thinking != "auto":
        return bool(config.thinking == "on")
    if config.max_new_tokens or config.answer_mode != "generate" or config.model is None:
        return False
    template = folder_template(str(config.model))
    if template is None:
        return False
    from jinja2 import TemplateError

    try:
        return of_template(template_renderer(template), template, str(config.model)).thinks
    except (TemplateError, TypeError, ValueError, KeyError):  # the load names a broken template
        return False


_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json", "tokenizer_config.json")


def folder_template(model: str) -> str | None:
    """The chat template a model folder (or Hub repository) ships, read from its files: the
    processor's ``chat_template.jinja``, else ``chat_template`` of chat_template.json or
    tokenizer_config.json; ``None`` when none is a single template."""
    import json

    for name in _TEMPLATE_FILES:
        text = _read(model, name)
        if text is None:
            continue
        if name.endswith(".jinja"):
            return text
        try:
            found = json.loads(text).get("chat_template")
        except (ValueError, AttributeError):
            continue
        if isinstance(found, str):
            return found
    return None


def _read(model: str, name: str) -> str | None:
    from pathlib import Path

    folder = Path(model)
    if folder.is_dir():
        path = folder / name
        return path.read_text(encoding="utf-8") if path.is_file() else None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(hf_hub_download(model, name)).read_text(encoding="utf-8")
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError):  # the load names it
        return None
