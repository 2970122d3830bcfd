"""One registry type for every kind of plug-in: backends, views, the sweep's launchers.

A :class:`Registry` maps names to plug-ins in registration order (the first is the default where a
flag has one). It is a ``dict``, so the code that reads it iterates and looks up as it would a
dict; :meth:`Registry.register` adds a plug-in after the kind's own check, and
:meth:`Registry.lookup` resolves a name given on the command line or in a file to its plug-in, or
refuses it with the one line every kind shares (``--backend 'x': unknown; expected one of ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

from mmspubench.errors import MMSpuBenchError

__all__ = ["Named", "Registry"]


class Named(Protocol):
    """What a plug-in declares for its registry: its name."""

    @property
    def name(self) -> str:
        """The name it is chosen by (a flag's value, a SWEEP.yaml key)."""
        ...


T = TypeVar("T", bound=Named)


def _no_check(registered: Mapping[str, T], plugin: T) -> None:
    """A kind whose plug-ins need no check beyond their name."""


class Registry(dict[str, T]):
    """Plug-ins of one kind by name, in registration order."""

    flag: str
    """The option that names one (``--backend``): the refusal of an unknown name starts with it."""
    check: Callable[[Mapping[str, T], T], None]
    """``(registered, plugin)``: the kind's own checks of a new plug-in against the registered ones;
    raises ``ValueError`` (a programming error, not a user's)."""

    def __init__(self, flag: str, check: Callable[[Mapping[str, T], T], None] = _no_check) -> None:
        super().__init__()
        self.flag = flag
        self.check = check

    def register(self, plugin: T) -> None:
        """Add ``plugin`` under its name once the kind's check passes."""
        self.check(self, plugin)
        self[plugin.name] = plugin

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order (a flag's choices)."""
        return tuple(self)

    def lookup(self, name: str) -> T:
        """The plug-in called ``name``; one line naming the choices if there is none."""
        if name not in self:
            raise MMSpuBenchError(f"{self.flag} {name!r}: unknown; expected one of {', '.join(self)}")
        return self[name]

    def copy(self) -> Registry[T]:
        """A registry of the same kind holding the same plug-ins (a test adds one to it)."""
        twin: Registry[T] = Registry(self.flag, self.check)
        twin.update(self)
        return twin
