"""A form's choices kept in the page's address, so that a reload or a link opens the form as it was last used: each
choice is a row (its name in the address, its default, its bounds or options); a widget starts from what the address
says (checked, never trusted: a value out of bounds or not among the options is the default), and what a person
chose is written back, only where it differs from the default, so that an untouched form leaves the address clean.
"""

from __future__ import annotations

from dataclasses import dataclass

from ui import session

__all__ = ["Choice"]

MOST_TEXT = 1000  # a text kept in the address at most (a longer one is not kept: the address stays a link)


@dataclass(frozen=True, kw_only=True)
class Choice:
    """One choice of a form: ``param`` in the address; a whole number in [low, high], a yes/no, a text, or one of
    ``options``, as its ``default`` is."""

    param: str
    default: int | str | bool
    low: int = 0
    high: int = 2**31 - 1
    options: tuple[str, ...] = ()

    def initial(self) -> int | str | bool:
        """What the widget starts from: the address's value when it is a valid one, else the default."""
        raw = session.page_param(self.param)
        if not raw:
            return self.default
        if isinstance(self.default, bool):
            return raw == "1"
        if isinstance(self.default, int):
            try:
                value = int(raw)
            except ValueError:
                return self.default
            return value if self.low <= value <= self.high else self.default
        if self.options:
            return raw if raw in self.options else self.default
        return raw if len(raw) <= MOST_TEXT else self.default

    def number(self) -> int:
        """``initial`` of a whole-number choice."""
        value = self.initial()
        return value if isinstance(value, int) and not isinstance(value, bool) else int(self.default)

    def text(self) -> str:
        """``initial`` of a text or an option."""
        return str(self.initial())

    def keep(self, value: int | str | bool) -> None:
        """Write ``value`` to the address (taken out when it is the default, or a text too long for a link)."""
        said = ("1" if value else "0") if isinstance(value, bool) else str(value)
        default = value == self.default or (isinstance(value, str) and len(value) > MOST_TEXT)
        session.set_page_param(self.param, "" if default else said)
