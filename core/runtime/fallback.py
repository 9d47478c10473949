"""Falling back is never silent: what a run says when an execution provider asked for is absent from its runtime,
takes no node, or is quietly left out of the session (ONNX Runtime keeps going on the CPU provider when, say,
CUDA's libraries do not load), and each provider's share of the nodes; with ``strict``, the refusal instead.

Partition and Benchmark call ``placement_notes`` on what a session did and put the notes first among their own
(warnings, said before any figure by the pages and the command line); ``refuse`` turns the warnings into
ProviderFallbackError (the command line's exit 2) when the run was asked to be strict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.errors import ProviderFallbackError
from core.i18n import N_, _, pgettext
from core.notes import Note, note, say, warning
from core.runtime.ort import install_of, short_name
from core.runtime.provider_options import CPU

__all__ = [
    "ABSENT",
    "DROPPED",
    "FALLBACKS",
    "PARTLY",
    "SHARE",
    "TOOK_NOTHING",
    "Placed",
    "nodes_per_provider",
    "placement_notes",
    "refuse",
    "session_placement",
]

ABSENT = N_(
    "{provider} is not in the runtime {runtime} (it offers {offered}); it needs {install}. Its nodes go to the next "
    "provider asked for, the CPU provider last. `python -m core runtimes` lists the runtimes and their providers."
)
DROPPED = N_(
    "{provider} was asked for and the runtime {runtime} has it, but the session runs without it (ONNX Runtime "
    "leaves a provider out when its libraries do not load): every node runs on the CPU provider."
)
TOOK_NOTHING = N_("{provider} took none of the {total} nodes: every node runs on the CPU provider.")
PARTLY = N_("{provider} runs {count} of the {total} nodes; the CPU provider runs the other {rest}.")
SHARE = N_("{provider} runs all {total} nodes.")
FALLBACKS = (ABSENT, DROPPED, TOOK_NOTHING, PARTLY)  # the notes that say a provider fell back (strict refuses them)
# never meant for a run: CPU and Azure (which only forwards requests to an endpoint) are not asked for as devices
_NOT_ASKED = (CPU, "AzureExecutionProvider")


@dataclass(frozen=True, kw_only=True)
class Placed:
    """What a session was asked for and what it did: the providers asked (in order), those its runtime offers,
    those the session kept (``get_providers()``) and how many nodes each ran."""

    runtime: str
    asked: list[str]
    available: list[str]
    used: list[str]
    nodes: dict[str, int] = field(default_factory=dict)


def nodes_per_provider(session: Any) -> dict[str, int]:
    """How many nodes each provider runs in ``session`` (made with ``session.record_ep_graph_assignment_info``);
    empty where the build cannot tell."""
    try:
        groups = session.get_provider_graph_assignment_info()
    except Exception:  # a build before 1.24, or a session made without the record
        return {}
    counts: dict[str, int] = {}
    for group in groups:
        counts[group.ep_name] = counts.get(group.ep_name, 0) + len(group.get_nodes())
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def session_placement(session: Any) -> tuple[list[str], dict[str, int]]:
    """(the providers ``session`` kept, how many nodes each runs): what ``placement_notes`` judges."""
    return list(session.get_providers()), nodes_per_provider(session)


def placement_notes(placed: Placed) -> list[Note]:
    """A warning for each provider asked for that is absent, left out or took nothing, and each other's share of
    the nodes (a note)."""
    notes: list[Note] = []
    total = sum(placed.nodes.values())
    for provider in (p for p in dict.fromkeys(placed.asked) if p not in _NOT_ASKED):
        name = short_name(provider)
        if provider not in placed.available:
            offered = ", ".join(short_name(p) for p in placed.available)
            install = note(install_of(provider))  # said translated
            notes.append(warning(ABSENT, provider=name, runtime=placed.runtime, offered=offered, install=install))
        elif provider not in placed.used:
            notes.append(warning(DROPPED, provider=name, runtime=placed.runtime))
        elif placed.nodes and not placed.nodes.get(provider):
            notes.append(warning(TOOK_NOTHING, provider=name, total=total))
        elif placed.nodes.get(provider, 0) < total:
            count = placed.nodes[provider]
            notes.append(note(PARTLY, provider=name, count=count, total=total, rest=placed.nodes.get(CPU, 0)))
        elif placed.nodes:
            notes.append(note(SHARE, provider=name, total=total))
    return notes


MAX_NAMED = 10  # nodes a refusal names


def refuse(notes: list[Note], strict: bool, on_cpu: list[str] | None = None) -> None:
    """With ``strict``, the fallbacks among ``notes`` as the refusal (ProviderFallbackError, exit 2), naming the
    nodes ``on_cpu`` (the first MAX_NAMED) when they are known."""
    fallbacks = [n for n in notes if n.key in FALLBACKS]
    if not strict or not fallbacks:
        return
    why = " ".join(say(n) for n in fallbacks)
    if on_cpu:
        named = pgettext("list", ", ").join(on_cpu[:MAX_NAMED])
        more = len(on_cpu) - MAX_NAMED
        why += " " + (
            _("On the CPU provider: {nodes} and {count} more.").format(nodes=named, count=more)
            if more > 0
            else _("On the CPU provider: {nodes}.").format(nodes=named)
        )
    raise ProviderFallbackError(
        _("Refused (--strict): {why} Run it without --strict to see what the CPU provider takes.").format(why=why)
    )
