"""What Deploy writes for the generated server beyond the model's signature, made in the job: a language model's
``generate`` (its cache's inputs and outputs and /generate's limits, read by the shipped generation.py), and what a
runtime brings (the requirement lines of its build of ONNX Runtime, the providers its session asks for)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from core.deploy.records import DeployRequest
from core.errors import DeployError
from core.i18n import _
from core.model.cache_config import plain_file
from core.runtime.runtimes import BUILDS, DEFAULT
from core.runtime.session_config import SessionConfig
from core.settings import PROJECT_ROOT

__all__ = [
    "MAX_NEW_TOKENS", "MAX_PROMPT_TOKENS", "MAX_STREAMS", "generate_spec", "readme_extra", "runtime_providers",
    "runtime_requirements",
]  # fmt: skip

MAX_NEW_TOKENS = 1024  # tokens one /generate request may ask for
MAX_PROMPT_TOKENS = 4096  # a prompt's tokens, at most
MAX_PROMPT_CHARS = 65_536  # a text prompt's characters, at most (tokenised before it is counted)
MAX_GENERATE_BODY = 1 << 20  # bytes of a /generate body (4,096 ids take ~30 KB)
MAX_STREAMS = 16  # generations at once; the next is answered 503 with Retry-After
MAX_TOKENIZER_BYTES = 64 << 20  # Qwen's tokenizer.json is 7 MB
CPU = "CPUExecutionProvider"
_BY_DEFAULT_NOT = ("TensorrtExecutionProvider",)  # builds engines for minutes first: served only when asked for


def generate_spec(source: Path, folder: Path, given: Path | None = None) -> tuple[dict[str, Any] | None, Path | None]:
    """signature.json's ``generate`` for the model at ``source`` and the tokenizer.json to package (found in
    ``folder``, the model's own: a variant made in a scratch folder has none beside it; else ``given``, its
    original's), or (None, None) for a model with no cache that grows token by token (no /generate)."""
    import onnx

    from core.model.proto import value_specs
    from core.model.recognise import recognise

    model = onnx.load_model(str(source), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    inputs, outputs = value_specs(model.graph.input, skip=initializers), value_specs(model.graph.output)
    layout = recognise(model, inputs, outputs, folder).layout
    if layout is None or layout.capacity is not None:  # a static cache is served one call at a time (/predict)
        return None, None
    tokenizer = plain_file(folder, layout.tokenizer) if layout.tokenizer else None
    if tokenizer is None and given is not None:
        tokenizer = plain_file(given.parent, given.name)
    if tokenizer is not None and tokenizer.stat().st_size > MAX_TOKENIZER_BYTES:
        tokenizer = None
    spec = {
        "ids": layout.ids, "ids_dtype": layout.ids_dtype, "logits": layout.logits, "mask": layout.mask,
        "mask_dtype": layout.mask_dtype, "positions": layout.positions, "positions_dtype": layout.positions_dtype,
        "cache_position": layout.cache_position, "past": layout.past_names, "present": layout.present_names,
        "kv_dtype": layout.kv_dtype, "kv_heads": layout.kv_heads, "head_size": layout.head_size,
        "sequence_axis": layout.sequence_axis, "vocabulary": layout.vocabulary,
        "context_length": layout.context_length, "eos_token_ids": list(layout.eos_token_ids),
        "tokenizer": "tokenizer.json" if tokenizer is not None else "",
        "max_new_tokens": MAX_NEW_TOKENS, "max_prompt_tokens": MAX_PROMPT_TOKENS, "max_prompt_chars": MAX_PROMPT_CHARS,
        "max_body_bytes": MAX_GENERATE_BODY, "max_streams": MAX_STREAMS,
    }  # fmt: skip
    return spec, tokenizer


def runtime_requirements(runtime: str) -> list[str]:
    """The requirement lines of ``runtime``'s ONNX Runtime, pinned to the version this job's worker (the runtime's
    own Python) runs, with what requirements-NAME.txt pins beside it (the GPU build's index and CUDA libraries)."""
    build = BUILDS.get(runtime)
    package = build.package if build is not None and runtime != DEFAULT else "onnxruntime"
    try:
        version = metadata.version(package)
    except metadata.PackageNotFoundError:
        raise DeployError(
            _(
                "{package} is not installed in the runtime {runtime}'s environment, so the server cannot be pinned to "
                "it; build it with make runtime-{runtime}."
            ).format(package=package, runtime=runtime)
        ) from None
    lines = [f"{package}=={version}"]
    listed = PROJECT_ROOT / f"requirements-{runtime}.txt"
    if build is not None and listed.is_file():
        for line in listed.read_text(encoding="utf-8").splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith(f"{package}=="):
                lines.append(line)
    return lines


def runtime_providers(runtime: str, request: DeployRequest, session: SessionConfig) -> tuple[str, ...]:
    """The providers the server's session asks for, CPU last: those the request names, else those Tune chose,
    else the runtime's own (OpenVINO's, CUDA's; TensorRT only when asked for). A provider this runtime lacks is
    refused, naming those it has: a server would quietly run without it."""
    import onnxruntime as ort

    available = ort.get_available_providers()
    if request.providers:
        asked = list(request.providers)
    elif tuple(session.providers) != (CPU,):
        asked = list(session.providers)
    else:
        from core.runtime.provider_options import SETUPS

        asked = [p for p in available if p in SETUPS and p not in _BY_DEFAULT_NOT]
    missing = [p for p in asked if p not in available]
    if missing:
        raise DeployError(
            _(
                "The runtime {runtime} has no {missing}; it offers {available}. Choose among them, or deploy for "
                "the runtime that has it (python -m core runtimes)."
            ).format(runtime=runtime, missing=", ".join(missing), available=", ".join(available))
        )
    return tuple(dict.fromkeys([*asked, CPU]))


def readme_extra(generate: dict[str, Any] | None, runtime: str) -> str:
    """What the package's README says of /generate (a language model) and of the runtime it was written for."""
    said = []
    if generate is not None:
        text = ' or `{"prompt": "text"}`' if generate["tokenizer"] else ""
        said.append(
            f"""## Generating tokens

`POST /generate` with `{{"prompt_ids": [ids...]}}`{text}, `"max_new_tokens": N` (default 32, at most
{generate["max_new_tokens"]:,}) and `"stop_at_eos"` (default true) streams greedy tokens as they are made, as NDJSON
(`application/x-ndjson`): a line `{{"token": id, "text": "..."}}` per token (`text` with the tokenizer.json packaged
here), then `{{"done": true, "tokens": N, "prompt_tokens": P, "stopped": "length"}}` (`"eos"` when an
end-of-sequence token stopped it). Prompts of at most {generate["max_prompt_tokens"]:,} tokens; at most
{generate["max_streams"]} generations at once (the next is answered 503 with `Retry-After`); the cache stays in ONNX
Runtime's buffers between tokens. Try it with `curl -N -d '{{"prompt_ids": [1, 2, 3]}}' -H 'content-type:
application/json' http://127.0.0.1:8000/generate`.
"""
        )
    if runtime != DEFAULT:
        build = BUILDS.get(runtime)
        package = build.package if build is not None else runtime
        said.append(
            f"Written for the runtime `{runtime}`: requirements.txt installs `{package}` in place of `onnxruntime`, "
            "and `providers.json` lists the execution providers the session asks for, with their options (CPU last: "
            "it runs what they do not take; `/health` names those in use).\n"
        )
    return ("\n" + "\n".join(said)) if said else ""
