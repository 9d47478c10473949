"""The job table: every job the worker may run, each a typed handle. Nothing outside it can be started.

A handle (``Job[Request, Result]``) names its function and says how it runs: whether it must run alone on the
machine (it measures time), whether a pre-started worker may take it, whether it may run on a cluster target,
and whether the app keeps its result with a model's link. Each job's function takes one frozen, keyword-only
request (the model, its plan, its options) and returns the feature's report; pages and the command line call
``core.jobs.run(HANDLE, request)``, so mypy checks every call against the function's own types. Two parameters
are filled in by whoever runs the job, never by the caller: ``progress`` (a callback) and ``limits`` (the
server's intake limits, from its settings).

The handles' types are named here for the type checker only: the worker imports a job's module when it runs
it, never the whole table's.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from core.access import Access, paths_in
from core.errors import JobError

if TYPE_CHECKING:
    from core.bench.records import BenchReport, BenchRequest
    from core.browser.payload import BrowserPayload, BrowserRequest
    from core.compare.records import CompareReport, CompareRequest
    from core.decode.graphed import DecodedWithGraph
    from core.decode.inspected import Inspected
    from core.decode.records import DecodedModel, DecodeRequest
    from core.deploy.records import DeployReport, DeployRequest, LoadtestReport, LoadtestRequest
    from core.diff.records import DiffReport, DiffRequest
    from core.export.options import ExportReport, ExportRequest
    from core.generate.records import GenerateReport, GenerateRequest
    from core.graph.records import GraphRequest, GraphView
    from core.model.data import ImageRequest, NpzRequest
    from core.model.inputs import BenchInput
    from core.model.intake import IntakeRequest
    from core.model.records import ModelRecord
    from core.model.zoo import SampleRequest
    from core.notebook.records import NotebookArchive, NotebookRequest
    from core.partition.records import LevelsRequest, OptimizationReport, PartitionRequest, PartitionResult
    from core.profile.records import ProfileReport, ProfileRequest
    from core.quantize.calibration import CalibrationRequest
    from core.quantize.lm_records import LMQuantizeReport, LMQuantizeRequest
    from core.quantize.records import QuantizeReport, QuantizeRequest
    from core.runtime.hardware import Hardware, HardwareRequest
    from core.tune.records import TuneReport, TuneRequest
    from core.upgrade.records import UpgradeReport, UpgradeRequest

__all__ = [
    "BENCH",
    "BROWSER",
    "CALIBRATION",
    "COMPARE",
    "DECODE",
    "DECODE_GRAPH",
    "DEPLOY",
    "DIFF",
    "EXPORT",
    "GENERATE",
    "GRAPH",
    "HARDWARE",
    "IMAGE_INPUT",
    "INSPECT",
    "INTAKE",
    "JOBS",
    "LOADTEST",
    "LOADTEST_URL",
    "NOTEBOOK",
    "NPZ_INPUTS",
    "OPTIMIZE",
    "PARTITION",
    "PROFILE",
    "QUANTIZE",
    "QUANTIZE_LM",
    "SAMPLE",
    "TUNE",
    "UPGRADE",
    "Job",
    "JobRegistry",
    "JobSignature",
    "signature_of",
]

Request = TypeVar("Request")
Result = TypeVar("Result")

INJECTED = ("progress", "limits")  # parameters the runner supplies


@dataclass(frozen=True, kw_only=True)
class Job(Generic[Request, Result]):
    """A typed handle on one job: its name, where its function lives, and how it runs."""

    name: str
    target: str  # "package.module:function"
    exclusive: bool = False  # measures time: waits for the machine (or the target) to itself
    # may run in a pre-started worker (core.jobs.warm), where the paths it is given are links to staged
    # folders: a job whose result names the resolved path of a file it read must not
    warm: bool = True
    # imports torch: goes to a pre-started worker that imported it ahead (the others do without its ~3 CPU-s)
    torch: bool = False
    targeted: bool = False  # may run on a target of the Ray cluster (the sidebar's "Run on")
    kept_with_link: bool = False  # its result names no file of the session's: kept with the model's link
    folder: str = ""  # in the app, the job writes into a fresh folder of the session's named so (its out_dir)
    # keeps the host's network in its sandbox (never a pre-started worker's): refused in hosted mode
    network: bool = False
    # a module with ``earlier(request, cache_dir)`` and ``keep(request, result, cache_dir)``: a result made before from
    # the same request is returned without a worker (the samples' exports, core.export.reuse)
    reuse: str = ""


@dataclass(frozen=True, kw_only=True)
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

    def __init__(self, jobs: Iterable[Job[Any, Any]]) -> None:
        self._jobs: dict[str, Job[Any, Any]] = {job.name: job for job in jobs}

    def get(self, name: str) -> Job[Any, Any]:
        job = self._jobs.get(name)
        if job is None:
            raise JobError(f"unknown job {name!r}; the registered jobs are: {', '.join(sorted(self._jobs))}")
        return job

    def names(self) -> list[str]:
        return sorted(self._jobs)

    def with_jobs(self, *jobs: Job[Any, Any]) -> JobRegistry:
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


# The app's jobs: one handle per feature.
INTAKE: Job[IntakeRequest, ModelRecord] = Job(name="intake.describe_files", target="core.model.intake:describe_files")
SAMPLE: Job[SampleRequest, ModelRecord] = Job(
    name="intake.describe_sample", target="core.model.zoo:sample_record", torch=True
)
EXPORT: Job[ExportRequest, ExportReport] = Job(
    name="export.run",
    target="core.export.exporter:export_model",
    folder="export",
    torch=True,
    reuse="core.export.reuse",
)
DECODE: Job[DecodeRequest, DecodedModel] = Job(
    name="decode.run", target="core.decode.decoder:decode_model", folder="decode"
)
# Decode's page on a small model: the decoding and the graph view in one worker, where each took one
DECODE_GRAPH: Job[DecodeRequest, DecodedWithGraph] = Job(
    name="decode.with_graph", target="core.decode.graphed:decode_with_graph", folder="decode"
)
# the inspect command's recognition and decoding of a model, in one worker (one interpreter's imports, not two)
INSPECT: Job[IntakeRequest, Inspected] = Job(name="decode.inspect", target="core.decode.inspected:inspect_files")
GRAPH: Job[GraphRequest, GraphView] = Job(name="graph.view", target="core.graph.job:graph_view_job")
PARTITION: Job[PartitionRequest, PartitionResult] = Job(
    name="partition.run", target="core.partition.partitioner:partition_model", targeted=True, folder="placements"
)
OPTIMIZE: Job[LevelsRequest, OptimizationReport] = Job(
    name="optimize.levels", target="core.partition.optimize:optimize_levels", targeted=True, folder="optimized"
)
BENCH: Job[BenchRequest, BenchReport] = Job(
    name="bench.run",
    target="core.bench.benchmark:run_benchmark",
    exclusive=True,
    targeted=True,
    kept_with_link=True,
    torch=True,
)
# the model's bytes, inputs and the server's outputs, for the visitor's browser (core.browser): runs the model once
BROWSER: Job[BrowserRequest, BrowserPayload] = Job(
    name="browser.payload", target="core.browser.payload:browser_payload"
)
PROFILE: Job[ProfileRequest, ProfileReport] = Job(
    name="profile.run",
    target="core.profile.profiler:profile_model",
    exclusive=True,
    targeted=True,
    kept_with_link=True,
    torch=True,
)
QUANTIZE: Job[QuantizeRequest, QuantizeReport] = Job(
    name="quantize.run",
    target="core.quantize.quantizer:quantize_model",
    exclusive=True,
    warm=False,
    targeted=True,
    folder="quantized",
)
# a language model's variants judged by their greedy tokens (core.quantize.lm): measures, as QUANTIZE
QUANTIZE_LM: Job[LMQuantizeRequest, LMQuantizeReport] = Job(
    name="quantize.language_model",
    target="core.quantize.lm:quantize_language_model",
    exclusive=True,
    warm=False,  # its result names the variants' files in its folder
    folder="quantized",
)
UPGRADE: Job[UpgradeRequest, UpgradeReport] = Job(  # onnx's version converter: native code, run in the sandbox
    name="upgrade.run", target="core.upgrade.converter:upgrade_model", folder="upgraded"
)
CALIBRATION: Job[CalibrationRequest, int] = Job(
    name="quantize.check_calibration", target="core.quantize.calibration:check_calibration"
)
IMAGE_INPUT: Job[ImageRequest, BenchInput] = Job(name="inputs.image", target="core.model.data:image_input")
NPZ_INPUTS: Job[NpzRequest, list[BenchInput]] = Job(name="inputs.npz", target="core.model.data:npz_inputs")
HARDWARE: Job[HardwareRequest, Hardware] = Job(  # what a cluster target is made of
    name="cluster.hardware", target="core.runtime.hardware:describe_hardware"
)

NOTEBOOK: Job[NotebookRequest, NotebookArchive] = Job(  # the whole walk-through: notebook + model files, zipped
    name="notebook.archive", target="core.notebook.archive:notebook_archive", folder="notebook"
)

DEPLOY: Job[DeployRequest, DeployReport] = Job(  # opens the model to read its inputs and outputs
    name="deploy.server", target="core.deploy.server:generate_server", folder="server"
)
# the load test measures: alone on the machine, as a benchmark. LOADTEST starts the server Deploy wrote on a
# loopback port inside its own sandbox; LOADTEST_URL loads a server elsewhere, so it keeps the network (local mode)
LOADTEST: Job[LoadtestRequest, LoadtestReport] = Job(
    name="deploy.loadtest", target="core.deploy.loadtest:run_loadtest", exclusive=True, warm=False
)
LOADTEST_URL: Job[LoadtestRequest, LoadtestReport] = Job(
    name="deploy.loadtest_url", target="core.deploy.loadtest:run_loadtest", exclusive=True, warm=False, network=True
)

DIFF: Job[DiffRequest, DiffReport] = Job(  # two models' structural diff: parses both, reads their weights
    name="diff.run", target="core.diff.differ:diff_models"
)

TUNE: Job[TuneRequest, TuneReport] = Job(  # measures: alone on the machine (or the target), as BENCH
    name="tune.run",
    target="core.tune.tuner:run_tune",
    exclusive=True,
    warm=False,  # its result names the variants' files in its folder
    targeted=True,
    folder="tuned",
)

COMPARE: Job[CompareRequest, CompareReport] = Job(  # two models tensor by tensor, on one machine's ORT
    name="compare.run", target="core.compare.engine:compare_models", targeted=True, kept_with_link=True
)

# a language model token by token (core.generate): measures, so alone on the machine as BENCH; a pre-started worker
# without torch (torch, imported for a reference only, would count in ONNX Runtime's peak memory)
GENERATE: Job[GenerateRequest, GenerateReport] = Job(
    name="generate.run", target="core.generate.generator:run_generate", exclusive=True, kept_with_link=True
)

HANDLES: list[Job[Any, Any]] = [INTAKE, SAMPLE, EXPORT, DECODE, GRAPH, PARTITION, OPTIMIZE, BENCH, PROFILE, QUANTIZE]
HANDLES += [
    UPGRADE,
    CALIBRATION,
    IMAGE_INPUT,
    NPZ_INPUTS,
    HARDWARE,
    NOTEBOOK,
    DEPLOY,
    LOADTEST,
    LOADTEST_URL,
    BROWSER,
    DIFF,
]
HANDLES += [TUNE, COMPARE, GENERATE, QUANTIZE_LM, INSPECT, DECODE_GRAPH]
JOBS = JobRegistry(HANDLES)
