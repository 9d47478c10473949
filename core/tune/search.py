"""What Tune tries, in which order, and when one configuration is surely faster than another. Pure: no sessions.

The search is greedy, one setting at a time, the most promising first: each stage changes one setting of the
best configuration so far (a provider that keeps its own thread pool comes with each thread count, and when it wins,
the CPU provider alone is tried at each count too), and a change is kept only when its median's 95 % interval lies
wholly below the best's, measured side by side in the same rounds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from core.i18n import N_, pgettext
from core.notes import Note, NoteValue, note, say
from core.runtime.ort import LEVELS, short_name
from core.runtime.provider_options import CPU, CUDA, SETUPS
from core.runtime.runtimes import DEFAULT as DEFAULT_RUNTIME
from core.runtime.session_config import SessionConfig
from core.tune.records import Candidate

__all__ = [
    "STAGES",
    "Space",
    "config_label",
    "config_note",
    "english_label",
    "stage_configs",
    "stage_winner",
    "surely_faster",
]

# the stages, the most promising first (notes' values in a saved run, said where shown)
STAGES = {
    "providers": N_("execution providers"),
    "threads": N_("intra-op threads"),
    "variant": N_("quantized and FP16 variants"),
    "batch": N_("batch size"),
    "io_binding": N_("IO binding"),
    "cuda_graph": N_("CUDA graphs"),
    "level": N_("optimization level"),
    "mode": N_("parallel execution"),
}
_LEVELS_TRIED = ("extended", "basic", "disable")  # ALL is the default; LAYOUT only differs from ALL on some EPs
NOT_HARDWARE = {"CPUExecutionProvider", "AzureExecutionProvider"}  # Azure sends requests away: not a device
GPU_PROVIDERS = {"CUDAExecutionProvider", "TensorrtExecutionProvider", "DmlExecutionProvider", "ROCMExecutionProvider"}


@dataclass(frozen=True, kw_only=True)
class Space:
    """What this machine and this model allow: the settings each stage may try."""

    physical_cores: int
    providers: tuple[str, ...]  # the accelerators' providers present (CPU and Azure left out)
    variants: tuple[str, ...]  # the variants made that passed the tolerance
    batches: tuple[int, ...]  # above 1, when the batch axis is open


def stage_configs(stage: str, best: SessionConfig, space: Space) -> list[SessionConfig]:
    """The configurations stage ``stage`` tries: ``best`` with that one setting changed."""
    change = dataclasses.replace
    if stage == "providers":
        # a provider with its own thread pool (OpenVINO) is tried at each thread count too: left to itself it takes
        # every core and can lose where one thread wins (TinyCNN here: 4.05 ms left alone, 0.47 ms at one thread),
        # and the threads stage then varies only the winner's threads
        return [
            change(best, providers=(p, CPU), intra_op_threads=n)
            for p in space.providers
            for n in [best.intra_op_threads, *(_thread_counts(best, space) if _own_threads(p) else [])]
        ]
    if stage == "threads":
        tried = [change(best, intra_op_threads=n) for n in _thread_counts(best, space)]
        if _own_threads(best.providers[0]):  # it won at a count of its own: the CPU provider alone gets each count too
            tried += [change(best, providers=(CPU,), intra_op_threads=n) for n in _counts(space)]
        return tried
    if stage == "variant":
        return [change(best, variant=v) for v in space.variants if v != best.variant]
    if stage == "batch":
        return [change(best, batch=b) for b in space.batches if b != best.batch]
    if stage == "io_binding":
        return [] if best.io_binding or best.providers[0] not in GPU_PROVIDERS else [change(best, io_binding=True)]
    if stage == "cuda_graph":  # ORT replays a CUDA graph only on CUDA with IO binding (its other rules: at run time)
        offered = best.io_binding and best.providers[0] == CUDA and not best.cuda_graph
        return [change(best, cuda_graph=True)] if offered else []
    if stage == "level":
        return [change(best, level=level) for level in _LEVELS_TRIED if level != best.level]
    if stage == "mode":
        return [] if best.execution_mode == "parallel" else [change(best, execution_mode="parallel")]
    raise ValueError(stage)


def _counts(space: Space) -> list[int]:
    """The intra-op thread counts a stage tries: one, half the cores, every core. Every core named explicitly is a
    count of its own: left at 0, ONNX Runtime takes as many threads but also pins them to cores (its threading docs),
    which on a shared machine can be the slower of the two."""
    return sorted({1, max(1, space.physical_cores // 2), space.physical_cores})


def _thread_counts(best: SessionConfig, space: Space) -> list[int]:
    """``_counts`` but ``best``'s own."""
    return [n for n in _counts(space) if n != best.intra_op_threads]


def _own_threads(provider: str) -> bool:
    setup = SETUPS.get(provider)
    return setup is not None and setup.own_threads


def surely_faster(a: Candidate, b: Candidate) -> bool:
    """Whether ``a``'s median per sample is below ``b``'s with their 95 % intervals apart."""
    if not (a.measured and b.measured):
        return False
    return a.ci_ms[1] < b.ci_ms[0]


def stage_winner(incumbent: Candidate, tried: list[Candidate]) -> Candidate:
    """The fastest of ``tried`` that is surely faster than ``incumbent`` (measured in the same rounds), else
    ``incumbent``; a variant must have passed the tolerance."""
    faster = [c for c in tried if c.accuracy_ok is not False and surely_faster(c, incumbent)]
    return min(faster, key=lambda c: c.median_ms) if faster else incumbent


_DEFAULTS = N_("ORT defaults")
_INTRA = N_("intra-op {count}")
_PARALLEL = N_("parallel, inter-op {count}")
_AUTO = N_("auto")
_IO_BINDING = N_("IO binding")
_BATCH = N_("batch {batch}")
_CUDA_GRAPH = N_("CUDA graphs")
_SETTINGS = N_("{first} · {rest}")  # a configuration's settings, one after another
_ON_RUNTIME = N_("{settings} on {runtime}")  # a configuration on another runtime than the default


def config_note(config: SessionConfig) -> Note:
    """What sets ``config`` apart from ONNX Runtime's defaults, as a note (the defaults alone: "ORT defaults"), and
    on another runtime than the default, which ("ORT defaults on openvino")."""
    said = _settings_note(config)
    return note(_ON_RUNTIME, settings=said, runtime=config.runtime) if config.runtime != DEFAULT_RUNTIME else said


def _settings_note(config: SessionConfig) -> Note:
    default = SessionConfig(runtime=config.runtime)
    parts: list[NoteValue] = []
    if config.providers != default.providers:
        parts.append(pgettext("list", ", ").join(short_name(p) for p in config.providers))
    if config.intra_op_threads != default.intra_op_threads:
        parts.append(note(_INTRA, count=config.intra_op_threads))
    if config.execution_mode != default.execution_mode:
        parts.append(note(_PARALLEL, count=config.inter_op_threads or note(_AUTO)))
    if config.level != default.level:
        parts.append(LEVELS[config.level].name)
    if config.io_binding:
        parts.append(note(_IO_BINDING))
    if config.cuda_graph:
        parts.append(note(_CUDA_GRAPH))
    if config.variant != default.variant:
        parts.append(config.variant)
    if config.batch != default.batch:
        parts.append(note(_BATCH, batch=config.batch))
    if not parts:
        return note(_DEFAULTS)
    said = parts[-1]
    for part in reversed(parts[:-1]):
        said = note(_SETTINGS, first=part, rest=said)
    return said if isinstance(said, Note) else Note.kept(str(said))


def config_label(config: SessionConfig) -> str:
    """``config_note`` in the reader's language."""
    return say(config_note(config))


def english_label(config: SessionConfig) -> str:
    """``config_label`` in English, as a saved run keeps it."""
    return config_note(config).english()
