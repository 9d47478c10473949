"""The job table: every job the worker may run, by name. Nothing outside it can be started.

Each entry names its function; the function's signature gives the types of its arguments and of its result,
so a caller passes and gets back the core's own dataclasses, and the worker builds typed arguments. Two
parameters are filled in by whoever runs the job, never by the caller: ``progress`` (a callback) and
``limits`` (the server's intake limits, from its settings).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from core.access import Access, paths_in
from core.errors import JobError

__all__ = ["JOBS", "Job", "JobRegistry", "JobSignature", "signature_of"]

INJECTED = ("progress", "limits")  # parameters the runner supplies


@dataclass(frozen=True)
class Job:
    """Where a job's function lives and whether it must run alone on the machine (it measures time)."""

    name: str
    target: str  # "package.module:function"
    exclusive: bool = False
    # may run in a pre-started worker (core.jobs.warm), where the paths it is given are links to staged
    # folders: a job whose result names the resolved path of a file it read must not
    warm: bool = True


@dataclass(frozen=True)
class JobSignature:
    """What a job's function takes and returns, read from its type hints."""

    parameters: dict[str, Any]  # name -> type, without the injected ones
    required: frozenset[str]
    result: Any
    takes_progress: bool
    takes_limits: bool
    marked: dict[str, Any]  # name -> type with its Annotated marks (which arguments are paths, see core.access)

    def paths(self, args: Mapping[str, Any]) -> Iterator[tuple[Access, str]]:
        """The paths ``args`` hands the job, with how it may use each: what its sandbox must show."""
        for name, value in args.items():
            yield from paths_in(value, self.marked.get(name, Any))


def resolve(target: str) -> Callable[..., Any]:
    module_name, func_name = target.split(":")
    func: Callable[..., Any] = getattr(importlib.import_module(module_name), func_name)
    return func


@functools.cache
def signature_of(target: str) -> JobSignature:
    """The typed signature of ``target``'s function (imported once; the feature modules import their heavy
    libraries lazily, so this costs the server little)."""
    func = resolve(target)
    hints = typing.get_type_hints(func)
    marked = typing.get_type_hints(func, include_extras=True)
    params = inspect.signature(func).parameters
    names = [n for n in params if n not in INJECTED]
    return JobSignature(
        parameters={n: hints.get(n, Any) for n in names},
        required=frozenset(n for n in names if params[n].default is inspect.Parameter.empty),
        result=hints.get("return", Any),
        takes_progress="progress" in params,
        takes_limits="limits" in params,
        marked={n: marked.get(n, Any) for n in names},
    )


class JobRegistry:
    """An allowlist of jobs by name; ``with_jobs`` gives a copy with more (tests add misbehaving jobs to their
    own copy, never to the app's table)."""

    def __init__(self, jobs: Iterable[Job]) -> None:
        self._jobs: dict[str, Job] = {job.name: job for job in jobs}

    def get(self, name: str) -> Job:
        job = self._jobs.get(name)
        if job is None:
            raise JobError(f"unknown job {name!r}; the registered jobs are: {', '.join(sorted(self._jobs))}")
        return job

    def names(self) -> list[str]:
        return sorted(self._jobs)

    def with_jobs(self, *jobs: Job) -> JobRegistry:
        return JobRegistry([*self._jobs.values(), *jobs])

    def check_arguments(self, name: str, args: Mapping[str, Any]) -> JobSignature:
        """The job's signature, after checking that ``args`` names only its parameters and all required ones."""
        signature = signature_of(self.get(name).target)
        unknown = sorted(set(args) - set(signature.parameters))
        missing = sorted(signature.required - set(args))
        if unknown or missing:
            takes = ", ".join(signature.parameters) or "nothing"
            raise JobError(
                f"job {name!r} was called with "
                + "; ".join(filter(None, [f"unknown {unknown}" if unknown else "", f"no {missing}" if missing else ""]))
                + f"; it takes {takes}"
            )
        return signature


# The app's jobs: one line per feature.
JOBS = JobRegistry(
    [
        Job("intake.describe_files", "core.model.intake:describe_files"),
        Job("intake.describe_sample", "core.model.zoo:describe_sample"),
        Job("export.run", "core.export.exporter:export_model"),
        Job("decode.run", "core.decode.decoder:decode_model"),
        Job("graph.view", "core.graph.job:graph_view_job"),
        Job("partition.run", "core.runtime.partition:partition_model"),
        Job("optimize.levels", "core.runtime.optimize:optimize_levels"),
        Job("bench.run", "core.bench.benchmark:run_benchmark", exclusive=True),
        Job("profile.run", "core.profile.profiler:profile_model", exclusive=True),
        Job("quantize.run", "core.quantize.quantizer:quantize_model", exclusive=True, warm=False),
        Job("quantize.check_calibration", "core.quantize.calibration:check_calibration"),
        Job("inputs.image", "core.model.data:image_input"),
        Job("inputs.npz", "core.model.data:npz_inputs"),
        Job("cluster.hardware", "core.runtime.hardware:describe_hardware"),  # what a target is made of
    ]
)
