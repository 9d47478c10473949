"""Sessions as a SessionConfig opens them, each call made ready for the benchmark harness (core.runtime.harness),
and the variants Tune may use: Quantize's, made by its tools and judged by its tolerance."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.errors import QuantizeError, RuntimeRefusedError, TuneError
from core.i18n import N_, _
from core.model.inputs import BenchInput, make_inputs
from core.notes import Note, note
from core.quantize.accuracy import accuracy, outputs, typed
from core.quantize.judge import Tolerance, failed_note
from core.quantize.variants import is_large, make_variant, stage_source, unstage_source
from core.runtime.fallback import Placed, placement_notes, session_placement
from core.runtime.harness import Config
from core.runtime.ort import explain_session_error, ort_message, stop_spinning
from core.runtime.provider_options import session_providers
from core.runtime.session_config import SessionConfig
from core.tune.records import Candidate
from core.tune.search import english_label

__all__ = ["harness_config", "make_variants", "open_session", "placed"]

NO_VARIANT = N_("No variant: {reason}")  # a note of the tune (said where shown)


def open_session(path: str, config: SessionConfig) -> tuple[Any, float]:
    """An InferenceSession of ``path`` opened as ``config`` says, and how long it took (ms). Its threads stop
    spinning when a call returns (core.runtime.ort.STOP_SPINNING): Tune times several sessions in turn. Each
    provider gets its options as Benchmark gives them (core.runtime.provider_options), and ORT records which provider
    took each node (``placed`` reads it)."""
    import onnxruntime as ort

    start = time.perf_counter_ns()
    try:
        options = stop_spinning(config.to_session_options())
        options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        providers = session_providers(
            config.session_providers(), threads=config.intra_op_threads, cuda_graph=config.cuda_graph
        )
        session = ort.InferenceSession(path, options, providers=providers)
    except Exception as exc:
        error = explain_session_error(exc, "create a session for this model", path)
        raise (error if isinstance(error, RuntimeRefusedError) else TuneError(str(error))) from exc
    return session, (time.perf_counter_ns() - start) / 1e6


def _call(session: Any, config: SessionConfig, feed: dict[str, Any]) -> Callable[[], list[Any]]:
    """One call of the model on ``feed``: ``session.run``, or through an IO binding on the first provider's
    device (inputs copied there once; outputs copied back each call, as a server must)."""
    feed = typed(session, feed)
    if not config.io_binding:
        return lambda: list(session.run(None, feed))
    import onnxruntime as ort

    device = "cuda" if config.providers[0] in ("CUDAExecutionProvider", "TensorrtExecutionProvider") else "cpu"
    binding = session.io_binding()
    for name, value in feed.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value, device, 0))
    for output in session.get_outputs():
        if config.cuda_graph:  # a CUDA graph replays on the same addresses: outputs allocated once, at fixed shapes
            binding.bind_ortvalue_output(output.name, _fixed_output(ort, output, config))
        else:
            binding.bind_output(output.name, device)

    def run() -> list[Any]:
        session.run_with_iobinding(binding)
        return list(binding.copy_outputs_to_cpu())

    return run


_NUMPY = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
          "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(bool)": "bool"}  # fmt: skip


def _fixed_output(ort: Any, output: Any, config: SessionConfig) -> Any:
    """An output's OrtValue on the GPU at its declared shape (the batch axis: the config's batch); a shape ONNX
    Runtime cannot know before a call cannot be captured as a CUDA graph, and the candidate says so."""
    shape = [config.batch if k == 0 and not isinstance(d, int) else d for k, d in enumerate(output.shape)]
    if not all(isinstance(d, int) and d > 0 for d in shape) or output.type not in _NUMPY:
        raise TuneError(
            _("CUDA graphs need outputs of fixed shapes; {name} is {type} of shape {shape}.").format(
                name=output.name, type=output.type, shape=output.shape
            )
        )
    return ort.OrtValue.ortvalue_from_shape_and_type(shape, _NUMPY[output.type], "cuda", 0)


def placed(candidate: Candidate, session: Any) -> None:
    """What ``session`` did with the candidate's providers, onto the candidate: the providers it kept, the nodes each
    runs, and what fell back (core.runtime.fallback), in the runtime this worker runs."""
    import onnxruntime as ort

    candidate.used, candidate.nodes = session_placement(session)
    asked = list(candidate.config.providers)
    where = Placed(runtime=candidate.config.runtime, asked=asked, available=ort.get_available_providers(),
                   used=candidate.used, nodes=candidate.nodes)  # fmt: skip
    candidate.placement = placement_notes(where)


def harness_config(candidate: Candidate, path: str, specs: list[BenchInput], seed: int) -> Config:
    """The candidate's session, opened, as one configuration of the harness (its label: the candidate's); what
    the session did with its providers goes onto the candidate (``placed``)."""
    config = candidate.config
    session, load_ms = open_session(path, config)
    placed(candidate, session)
    run = _call(session, config, make_inputs(specs, config.batch, seed))
    return Config(
        label=candidate.label,
        engine="ort",
        level=config.level,
        provider=config.providers[0],
        threads=config.intra_op_threads,
        batch=config.batch,
        run=run,
        load_ms=load_ms,
        provider_nodes=candidate.nodes,
    )


def make_variants(
    keys: list[str],
    source: Path,
    out: Path,
    feeds: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    tolerance: Tolerance,
    deadline: float,
) -> tuple[list[Candidate], dict[str, str], list[Note | str]]:
    """Each variant made with Quantize's tools (FP16 checks its range on the first of ``feeds``) and judged on the
    second, held out, by Quantize's tolerance, while time is left before ``deadline``: (one candidate per variant
    made or refused, their files, the notes)."""
    seen, held_out = feeds
    notes: list[Note | str] = []
    try:
        large = is_large(source)
    except QuantizeError as exc:
        return [], {}, [note(NO_VARIANT, reason=Note.kept(str(exc)))]
    out.mkdir(parents=True, exist_ok=True)
    staged = stage_source(source, out, notes)
    reference, _load = open_session(str(source), SessionConfig())
    expected = [outputs(reference, feed) for feed in held_out]
    made: list[Candidate] = []
    paths: dict[str, str] = {}
    try:
        for key in keys:
            if time.perf_counter() > deadline:
                break
            made.append(_judged(key, staged, out, (seen, held_out), expected, tolerance, large, paths))
    finally:
        unstage_source(out)
    return made, paths, notes


def _judged(
    key: str,
    staged: Path,
    out: Path,
    feeds: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    expected: list[list[Any]],
    tolerance: Tolerance,
    large: bool,
    paths: dict[str, str],
) -> Candidate:
    config = SessionConfig(variant=key)
    candidate = Candidate(config=config, label=english_label(config), stage="variant")
    seen, held_out = feeds
    try:
        target = make_variant(key, staged, None, out, seen, large)
        session, _load = open_session(str(target), SessionConfig())
        measured = accuracy(expected, [outputs(session, feed) for feed in held_out])
    except (QuantizeError, TuneError) as exc:
        candidate.error = str(exc)
        return candidate
    except Exception as exc:  # ORT's quantizer raises plain errors on graphs it cannot handle
        candidate.error = _("ONNX Runtime could not make this variant: {reason}").format(reason=ort_message(exc)[:600])
        return candidate
    failed = tolerance.failures(measured)
    candidate.accuracy_ok, candidate.accuracy_note = not failed, failed_note(failed)
    candidate.cosine, candidate.max_abs_error = measured.cosine_similarity, measured.max_abs_error
    paths[key] = str(target)
    return candidate
