"""Hooks for what cuts across pages: a feature's view adds itself to every page by registering here when it is
imported (streamlit_app.py imports them first thing), so the shared helpers (ui/pages.py, ui/jobs.py) call what is
registered and import no feature's view. The classroom says which pages a room shows and pools a participant's
results; the upgrade offers itself under an old model's refusal; the next step's job starts while a page is read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from core.errors import WorkbenchError
    from core.jobs.registry import Job

__all__ = ["ERROR_SHOWN", "NEXT_STEP", "PAGES_SHOWN", "RESULT_KEPT", "Hook"]

F = TypeVar("F", bound=Callable[..., Any])


class Hook(Generic[F]):
    """The callables registered for one moment, in the order they were registered; one per function (a module
    imported again replaces its own)."""

    def __init__(self, moment: str) -> None:
        self.moment = moment
        self._registered: dict[str, F] = {}

    def register(self, hook: F) -> F:
        """Call ``hook`` at this moment from now on (usable as a decorator)."""
        self._registered[f"{hook.__module__}.{hook.__qualname__}"] = hook
        return hook

    def __iter__(self) -> Iterator[F]:
        return iter(list(self._registered.values()))


# the rows of the table of pages (ui.pages.PAGES) -> those listed and linked in this run, each hook in turn
PAGES_SHOWN: Hook[Callable[[tuple[Any, ...]], list[Any]]] = Hook("the pages listed")
# (job, result): where ui.jobs.run keeps a result a page made for the current model
RESULT_KEPT: Hook[Callable[[Job[Any, Any], Any], None]] = Hook("a result kept")
# a user's error, just shown by ui.jobs.show_error: what is offered beneath it
ERROR_SHOWN: Hook[Callable[[WorkbenchError], None]] = Hook("an error shown")
# a page's first next step (ui.needs.next_steps, the Model page's link): the step's view may start its job now
NEXT_STEP: Hook[Callable[[str], None]] = Hook("the next step offered")
