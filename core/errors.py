"""The named errors a user can cause, shared by core, the worker and the pages."""

from __future__ import annotations

__all__ = [
    "BenchmarkError",
    "BrowserBenchError",
    "CodeError",
    "DeployError",
    "DiffError",
    "CompareError",
    "ExportError",
    "GenerateError",
    "IdentityRefused",
    "IntakeError",
    "NotebookError",
    "JobCancelled",
    "JobCrashed",
    "JobError",
    "JobFailed",
    "JobOutOfMemory",
    "JobTimedOut",
    "LimitExceededError",
    "LoadtestError",
    "MissingDataError",
    "MissingExtraError",
    "NoMatchingArchitectureError",
    "NotAModelServer",
    "OldOpsetError",
    "PartitionError",
    "RoomError",
    "PlanTooLargeError",
    "ProviderFallbackError",
    "ResultFileError",
    "QuantizeError",
    "RuntimeNotFound",
    "RuntimeRefusedError",
    "SessionConfigError",
    "StoreError",
    "TargetError",
    "TargetLost",
    "TuneError",
    "UnknownSampleError",
    "UnsafeModelError",
    "UnsetDimError",
    "UnsupportedFormatError",
    "UpgradeError",
    "WorkbenchError",
    "brief",
    "error_class",
]


class WorkbenchError(Exception):
    """Something the user can fix; the message says what was wrong and what to do."""


class ResultFileError(WorkbenchError):
    """A file a result names is missing, outside the folder its job was given, a link, or not what the result
    says."""


class IntakeError(WorkbenchError):
    """An uploaded file could not be read as a model."""


class UnsupportedFormatError(IntakeError):
    """The bytes are not a model format we read."""


class UnsafeModelError(IntakeError):
    """The file would run code or reach outside its folder if opened."""


class LimitExceededError(IntakeError):
    """The model is larger than this instance's limits allow."""


class MissingDataError(IntakeError):
    """An ONNX model's external-data file is not beside it (not uploaded with it: the upload box refuses a file over
    the upload limit before the app sees it)."""


class NoMatchingArchitectureError(IntakeError):
    """A state_dict whose keys match no architecture in the sample zoo."""


class CodeError(IntakeError):
    """A model's own code could not be read, imported or built (a syntax error, a module this machine lacks, its
    constructor raising, arguments or weights that do not fit)."""


class UnknownSampleError(WorkbenchError):
    """A sample name that is not in the zoo."""


class ExportError(WorkbenchError):
    """The exporter could not turn the PyTorch model into ONNX."""


class NotebookError(WorkbenchError):
    """A notebook cannot be written as asked (a step it does not know, a model whose files are gone)."""


class PartitionError(WorkbenchError):
    """ONNX Runtime could not place or optimize the model, or the request names no known provider."""


class RuntimeRefusedError(WorkbenchError):
    """ONNX Runtime refuses to open the model for a reason the message names in the user's terms (an op it has no
    kernel for, a locale the machine lacks), not for a setting of this app."""


class RuntimeNotFound(WorkbenchError):
    """A job asked for a runtime (an ONNX Runtime build in an environment of its own) this machine has not built."""


class ProviderFallbackError(WorkbenchError):
    """With --strict (session.disable_cpu_ep_fallback): an execution provider asked for is absent, takes no node,
    or leaves nodes to the CPU provider, so the run is refused instead of quietly measuring the CPU."""


class OldOpsetError(RuntimeRefusedError):
    """The model uses operator versions older than any ONNX Runtime runs; onnx's version converter can upgrade it."""


class UpgradeError(WorkbenchError):
    """onnx's version converter could not upgrade the model as asked."""


class DiffError(WorkbenchError):
    """Two models cannot be diffed: one is no ONNX model, or cannot be parsed."""


class BenchmarkError(WorkbenchError):
    """A benchmark could not be set up or run (bad configuration, inputs that do not fit the model)."""


class BrowserBenchError(BenchmarkError):
    """The model in the visitor's browser: one too large to send (browser_model_mb), or a browser's result file
    that is not one."""


class PlanTooLargeError(BenchmarkError):
    """An input plan whose arrays cannot fit in a worker's memory, or whose dims no array can have."""


class UnsetDimError(BenchmarkError):
    """An input plan with an open dim that nothing in the model sizes: it runs only once the user gives it one."""


class GenerateError(BenchmarkError):
    """A language model cannot be generated from as asked: a cache whose layout was not recognised, a prompt outside
    its vocabulary or past its context, a reference that is no Hugging Face causal language model."""


class DeployError(WorkbenchError):
    """A server could not be generated for the model (a variant it cannot make, an output folder in the way)."""


class LoadtestError(WorkbenchError):
    """A load test could not run: an address it may not reach, a server that did not start or answer."""


class NotAModelServer(LoadtestError):
    """An address a load test was given that is no model server: nothing answers there, its ``GET /health`` is not
    the generated server's, or it serves another model than the one given."""


class CompareError(WorkbenchError):
    """Two models cannot be compared as asked (no tensor in common, inputs that differ, a level not known)."""


class QuantizeError(WorkbenchError):
    """The model cannot be quantized as asked, or the calibration data does not fit it."""


class TuneError(WorkbenchError):
    """A tuning run cannot be set up as asked."""


class SessionConfigError(WorkbenchError):
    """A session configuration (core.runtime.session_config) that is not one ONNX Runtime can take: an unknown key
    or a bad value, as Tune, Deploy and the command line's --tuned file meet it."""


class MissingExtraError(WorkbenchError):
    """A setting needs packages the local app does not install (core/extras.py says which, and how)."""


class StoreError(WorkbenchError):
    """The benchmark history database could not be reached or written."""


class RoomError(WorkbenchError):
    """A classroom's room could not be joined, opened or changed (a wrong code, an expired room, a bad name)."""


class IdentityRefused(WorkbenchError):
    """Who signed in cannot be told safely (an unverified email, invisible characters, a repeated header...)."""


class TargetError(WorkbenchError):
    """The cluster, or the target a job was sent to, cannot be reached or does not exist."""


class JobError(WorkbenchError):
    """The worker process did not return a result."""


class JobCrashed(JobError):
    """The worker died from a signal (a crash in native code)."""


class JobTimedOut(JobError):
    """The worker ran past its wall-clock limit and was stopped."""


class JobOutOfMemory(JobError):
    """The worker went past its memory limit and was stopped."""


class JobCancelled(JobError):
    """The job was cancelled before it finished."""


class JobFailed(JobError):
    """The job raised an unexpected exception inside the worker."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


class TargetLost(JobError):
    """The cluster node running the job was lost (died, or cut off) before the job ended."""


def _with_subclasses(cls: type[WorkbenchError]) -> list[type[WorkbenchError]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += _with_subclasses(sub)
    return found


# A user's error a worker raises comes back as itself, by its name: every class here but the backend's own
# endings (JobError's: a job never raises them) and a sign-in refusal (the server's). Derived, not listed: a list
# missed Compare's and Tune's errors, which came back as "The job failed: Error: …".
_BY_NAME: dict[str, type[WorkbenchError]] = {
    cls.__name__: cls for cls in _with_subclasses(WorkbenchError) if not issubclass(cls, (JobError, IdentityRefused))
}


def brief(text: object, limit: int = 80) -> str:
    """Text from a file, short enough for a message: at most ``limit`` characters, control characters shown."""
    shown = repr(str(text))[1:-1]
    return shown if len(shown) <= limit else f"{shown[:limit]}… ({len(str(text)):,} characters)"


def error_class(name: str) -> type[WorkbenchError] | None:
    """The user-facing error class called ``name``, so a worker's error is raised again as itself."""
    return _BY_NAME.get(name)
