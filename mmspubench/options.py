"""Options written once: a dataclass field per option carrying its default, help, choices and range.

:func:`option` makes such a field; :func:`add_fields` generates the argparse flags of a dataclass
from its fields (flags, defaults, help, choices) and :func:`values_of` reads them back. The run
config of ``eval`` (:class:`~mmspubench.eval.config.RunConfig`), each backend's ``Options`` and the
configs of the other commands are all declared this way, so a default cannot drift between a
parser and a dataclass. Part-neutral: it imports nothing of the package, so every part (the
dataset builder too) declares its options with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Any

Choices = Sequence[str] | Callable[[], Sequence[str]]
"""Allowed values, or a function giving them when asked (the registered backends' names)."""


def option(
    default: Any,
    help: str,
    *,
    choices: Choices | None = None,
    cli_choices: bool = True,
    parse: Callable[[str], Any] | None = None,
    arg_type: Callable[[str], Any] | None = None,
    recorded: bool = True,
    identity: bool = True,
    cli: bool = True,
    added_later: bool = False,
    identity_when_set: bool = False,
    recorded_when_set: bool = False,
    default_factory: Callable[[], Any] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    expect: str | None = None,
    positional: bool = False,
    metavar: str | None = None,
    exclusive: str | None = None,
) -> Any:
    """A dataclass field with what the parser, the check and results.json need.

    ``choices``: allowed values (checked by ``validate``; given to argparse unless ``cli_choices``
    is false, for options whose error line predates the generated parser). ``parse``: turns the
    command-line text into the value (e.g. the metrics list). ``arg_type``: argparse ``type``.
    ``recorded``: written into results.json's ``config``; ``identity``: a resumed run must match it
    (speed-only options such as the device are not). ``cli``: has a command-line flag.
    ``added_later``: a recorded option that results files written before it existed lack; reading
    such a file gives the default (the options of the first release are required).
    ``identity_when_set``: the option joins the run identity only when it differs from its default,
    so runs made before it existed keep their identity (and resume). ``recorded_when_set``: the
    option is written into results.json's ``config`` only when it differs from its default, so the
    results of runs that do not use it stay byte for byte those of before (needs ``added_later``).
    ``minimum``/``maximum``: the range of a number, ``expect`` its wording in the error line
    (checked with every field's type by :mod:`mmspubench.eval.config_checks`). ``positional``: an
    argument without a flag (``report RESULTS_JSON``); ``metavar``: its name in the usage line;
    ``exclusive``: options of the same group name may not be given together.
    """
    meta = {
        "help": help,
        "choices": None if choices is None or callable(choices) else tuple(choices),
        "choices_from": choices if callable(choices) else None,
        "cli_choices": cli_choices,
        "parse": parse,
        "arg_type": arg_type,
        "recorded": recorded,
        "identity": identity and recorded,
        "cli": cli,
        "added_later": added_later,
        "identity_when_set": identity_when_set,
        "recorded_when_set": recorded_when_set,
        "minimum": minimum,
        "maximum": maximum,
        "expect": expect,
        "positional": positional,
        "metavar": metavar,
        "exclusive": exclusive,
    }
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=meta)
    if default is dataclasses.MISSING:  # a required option (``--flag`` must be given)
        return field(metadata=meta)
    return field(default=default, metadata=meta)


def choices_of(f: dataclasses.Field[Any]) -> tuple[str, ...] | None:
    """The allowed values of a field made by :func:`option` (``None``: any value of its type)."""
    given = f.metadata.get("choices_from")
    return tuple(given()) if given is not None else f.metadata.get("choices")


def flag(name: str) -> str:
    """The command-line flag of a field: ``batch_size`` -> ``--batch-size``."""
    return "--" + name.replace("_", "-")


def cli_default(f: dataclasses.Field[Any]) -> Any:
    """A field's default (the value of its factory, e.g. a tuple or ``{}``), or ``None``."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def help_with_default(f: dataclasses.Field[Any]) -> str:
    """A field's help text, ending with its default when the text does not state it already."""
    text = str(f.metadata["help"])
    required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    if "default" in text or f.metadata.get("positional") or required:
        return text
    default = cli_default(f)
    shown = ",".join(default) if isinstance(default, tuple) else "none" if default is None else default
    return f"{text} (default: {shown})"


def add_fields(parser: argparse.ArgumentParser, cls: type, *, skip: Sequence[str] = ()) -> None:
    """One argparse argument per command-line field of the dataclass ``cls``, in field order."""
    groups: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if not meta.get("cli", False) or f.name in skip:
            continue
        exclusive = meta.get("exclusive")
        if exclusive is not None and exclusive not in groups:
            groups[exclusive] = parser.add_mutually_exclusive_group()
        _add_field(groups[exclusive] if exclusive is not None else parser, f)


def _add_field(parser: Any, f: dataclasses.Field[Any]) -> None:
    """The argparse argument of one field (on a parser or a mutually exclusive group)."""
    meta = f.metadata
    default = cli_default(f)
    if isinstance(default, bool):
        if default:  # on by default: the flag turns it off
            name = f"--no-{f.name.replace('_', '-')}"
            parser.add_argument(name, dest=f.name, action="store_false", help=help_with_default(f))
        else:
            parser.add_argument(flag(f.name), action="store_true", help=help_with_default(f))
        return
    kwargs: dict[str, Any] = {"help": help_with_default(f)}
    required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    if required and not meta.get("positional"):
        kwargs["required"] = True
    if meta["parse"] is not None:
        # An empty list's flag defaults to None (read back as the field's default), so that a
        # value given empty on the command line reaches the parser and is refused there.
        kwargs["default"] = (",".join(default) or None) if isinstance(default, tuple) else default
    else:
        kwargs["default"] = default
        choices = choices_of(f)
        if choices is not None and meta["cli_choices"]:
            kwargs["choices"] = choices
    if meta["arg_type"] is not None:
        kwargs["type"] = meta["arg_type"]
    if meta.get("metavar"):
        kwargs["metavar"] = meta["metavar"]
    if meta.get("positional"):
        kwargs.pop("default")
        parser.add_argument(f.name, **kwargs)
    else:
        parser.add_argument(flag(f.name), **kwargs)


def values_of(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """The command-line fields of ``cls`` read from parsed ``args`` (text options parsed)."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.metadata.get("cli", False):
            continue
        value = getattr(args, f.name)
        if value is None and cli_default(f) == ():  # the flag was not given (see add_fields)
            value = ()
        parse = f.metadata["parse"]
        values[f.name] = parse(value) if parse is not None and isinstance(value, str) else value
    return values


def closest(name: str, names: Sequence[str]) -> str | None:
    """The name in ``names`` closest to a mistyped ``name`` (``difflib``), or ``None`` if none is close."""
    import difflib

    by_lower = {n.lower(): n for n in reversed(list(names))}  # ACCURACY is a typo of accuracy too
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def did_you_mean(name: str, names: Sequence[str]) -> str:
    """`` (did you mean X?)`` for the name closest to ``name``, or ``""``."""
    close = closest(name, names)
    return f" (did you mean {close}?)" if close else ""


_OWNER = "_unrecognized_by"
"""Namespace attribute: the innermost (sub)parser that was left with unrecognized arguments."""


class SuggestingParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose unknown options are refused by the (sub)command they were given
    to, with that command's usage line and the closest option it has (``difflib``).

    Subparsers made from it (``add_subparsers().add_parser``) are of this class too.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(args) if args is not None else sys.argv[1:]  # what argparse reads too
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and not hasattr(parsed, _OWNER):  # the innermost parser finishes first
            setattr(parsed, _OWNER, self)
        return parsed, extras

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        owner = getattr(parsed, _OWNER, self)
        if hasattr(parsed, _OWNER):
            delattr(parsed, _OWNER)
        if extras:
            owner.error(owner.unrecognized(extras))
        return parsed

    def unrecognized(self, extras: Sequence[str]) -> str:
        """``unrecognized arguments: ...``, with the closest option to the first unknown one, or
        the space that split a comma-separated list (``--metrics accuracy, circular``)."""
        text = f"unrecognized arguments: {' '.join(extras)}"
        split = self._split_list(extras)
        if split:
            return f"{text} ({split})"
        unknown = next((a for a in extras if a.startswith("-") and a != "-" and not self._known(a)), None)
        return text + self._suggestion(unknown) if unknown else text

    def error(self, message: str) -> Any:
        """An invalid sub-command or a missing required option that comes with an unknown option
        is that option's error (``space --prot 7861``, ``build --sorce x``)."""
        odd = (
            "invalid choice" in message
            or message.startswith("unknown command")
            or message.startswith("the following arguments are required")
        )
        unknown = self._first_unknown_option() if odd else None
        if unknown and self._command_word_first(unknown):  # `evl --out x`: the command is misspelt
            unknown = None
        if unknown:
            message = f"unrecognized arguments: {unknown}{self._suggestion(unknown)}"
        elif getattr(self, "_command_typo", False):  # one line: the usage would only list the commands
            self.exit(2, f"{self.prog}: error: {message}\n")
        return super().error(message)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """An unknown subcommand or choice also names the closest one (``evl``: did you mean eval?)."""
        if action.choices is None or value in action.choices:
            return
        names = [str(c) for c in action.choices]
        if isinstance(action, argparse._SubParsersAction):
            self._command_typo = True
            self._bad_command = str(value)
            raise argparse.ArgumentError(None, f"unknown command {value!r}{did_you_mean(str(value), names)}")
        close = closest(str(value), names)
        hint = f"did you mean {close!r}? " if close else ""
        choices = ", ".join(map(repr, action.choices))
        raise argparse.ArgumentError(action, f"invalid choice: {value!r} ({hint}choose from {choices})")

    def _split_list(self, extras: Sequence[str]) -> str | None:
        """Why ``extras`` are left over when they are the tail of a comma-separated list the shell
        split at a space (``--metrics accuracy, circular``), or ``None``."""
        given = getattr(self, "_given", [])
        if not extras or extras[0] not in given or extras[0].startswith("-"):
            return None
        at = given.index(extras[0])
        if at >= 1 and given[at - 1].startswith("--") and "=" in given[at - 1]:  # --metrics=accuracy,
            flag_given, before = given[at - 1].split("=", 1)
        elif at >= 2:
            flag_given, before = given[at - 2], given[at - 1]
        else:
            return None
        tail = []
        for arg in given[at:]:
            if arg.startswith("-") or not (before.endswith(",") or arg.startswith(",")):
                break
            tail.append(arg)
            before += arg
        if not tail or not flag_given.startswith("--"):
            return None
        return f"the list of {flag_given} has a space: write {flag_given} {before}"

    def _command_word_first(self, option: str) -> bool:
        """Whether the misspelt command word was given before ``option`` (``evl --out x``), rather
        than being the value of that unknown option (``space --prot 7861``)."""
        word = getattr(self, "_bad_command", None)
        given = getattr(self, "_given", [])
        if word is None or word not in given or option not in given:
            return False
        return given.index(word) < given.index(option)

    def _first_unknown_option(self) -> str | None:
        for arg in getattr(self, "_given", []):
            if arg == "--":
                return None
            if arg.startswith("-") and arg != "-" and not arg[1:2].isdigit() and not self._known(arg):
                return arg
        return None

    def _long_options(self) -> list[str]:
        return [s for action in self._actions for s in action.option_strings if s.startswith("--")]

    def _known(self, arg: str) -> bool:
        name = arg.split("=", 1)[0]
        options = [s for action in self._actions for s in action.option_strings]
        if name in options:
            return True
        prefixed = (
            [s for s in options if s.startswith(name)] if self.allow_abbrev and name.startswith("--") else []
        )
        return len(prefixed) == 1

    def _suggestion(self, unknown: str) -> str:
        return did_you_mean(unknown.split("=", 1)[0], self._long_options())
