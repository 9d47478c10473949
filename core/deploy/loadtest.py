"""The load test: a served model's latency and throughput at each concurrency, beside ONNX Runtime in-process.

Method: one request body is made from the model's input plan (core.model.inputs, seeded): JSON, unless its text
would be large (AUTO_JSON_BYTES), then an .npy (one input) or .npz body, with the answers asked for as .npz too.
Its outputs are computed in-process with the server's own session options; the in-process latency is measured
one call at a time (IN_PROCESS_S, at least IN_PROCESS_CALLS calls), and what one call takes sizes the rest: a
request's timeout (core.deploy.load_requests: 30 s, or four calls for each request ahead of it, if longer) and whether
a concurrency is warmed up with a request per worker or one.
Then, for each concurrency, that many workers (asyncio tasks on one aiohttp client with as many connections) send
the body back to back for ``duration_s`` seconds after a short warm-up; each request's latency is timed on the
client, and a seeded sample of responses is checked against the in-process outputs. Percentiles come with
distribution-free order-statistic intervals (core.runtime.stats). A folder Deploy wrote is started with uvicorn on
a loopback port of the job's own (its sandbox has no other network) and stopped after.

Before any load, the server's ``GET /health`` must be the generated server's (core/deploy/served_app.py: status
"ok", the model's inputs and outputs) and name the model given: an address that is no model server is refused at
once (NotAModelServer), never loaded. A run of failures stops the load (STOP_RUN in a row, or more than STOP_SHARE
of at least STOP_MIN requests): a server that fails is not loaded on for the whole duration at every concurrency.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from core.deploy.load_requests import RequestBody, check_body, failure, max_diff, request_body, timed_out, timeout_s
from core.deploy.records import LoadResult, LoadtestReport, LoadtestRequest
from core.deploy.session import session_for
from core.deploy.target import check_server, started_app
from core.deploy.token_load import Streamed, tokens_headline
from core.errors import LoadtestError
from core.i18n import N_, _
from core.model.inputs import make_inputs
from core.notes import Note, note, say, significant, warning
from core.runtime.machine import environment
from core.runtime.session_config import SessionConfig
from core.runtime.stats import median_interval, quantile_interval

T = TypeVar("T")

__all__ = [
    "DIFFERS", "ERRORS", "HEADLINE", "JSON_COSTS", "JSON_COSTS_MS", "NO_ANSWER", "STOPPED", "check_server", "headline",
    "json_costs", "run_client", "run_loadtest", "started_app",
]  # fmt: skip

IN_PROCESS_S = 2.0  # the in-process latency's time budget
STOP_RUN = 20  # failures in a row that stop the load
STOP_SHARE, STOP_MIN = 0.5, 40  # ... or more than this share failed, once at least STOP_MIN requests were sent
IN_PROCESS_CALLS = 6  # the fewest in-process calls timed: the fewest whose median has a 95 % interval
# what a load test says: notes (a template and its values), said in the reader's language where they are shown
ERRORS = N_("{count} of {total} requests at concurrency {concurrency} failed, e.g. {example}")
DIFFERS = N_(
    "The outputs of {checked} checked responses at concurrency {concurrency} differ from ONNX Runtime in-process by "
    "up to {diff}: the server does not run the model as it runs here."
)
JSON_COSTS = N_(
    "HTTP and JSON took {overhead} ms of the {p50} ms at concurrency {concurrency}: the input's {count} numbers are "
    "written and parsed as JSON text on every request. Send the input as an .npy body (the request body on the Deploy "
    "page, or --body npy on the command line) to measure the server without that cost, as a client sending large "
    "tensors should."
)
STOPPED = N_(
    "The load stopped at concurrency {concurrency}: {count} of {total} requests failed (the first: {example}); "
    "a server failing so is not loaded further, nor at a higher concurrency."
)
JSON_COSTS_MS = 5.0  # HTTP and JSON past this, and past the call itself, are mostly the body's text: .npy is said
HEADLINE = N_(
    "Served over HTTP: p50 {p50} ms at concurrency {concurrency} against {local} ms in-process (HTTP and {body} cost "
    "{overhead} ms); at most {rps} requests/s, at concurrency {best}."
)
NO_ANSWER = N_("No request was answered; see the errors.")


@dataclass(kw_only=True)
class _Load:
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    examples: list[Note | str] = field(default_factory=list)  # a timeout's reason is a note; a server's words as sent
    sampled: list[bytes] = field(default_factory=list)
    seen: int = 0
    elapsed_s: float = 0.0
    in_a_row: int = 0  # failures since the last success
    stopped: bool = False  # stopped by a run of failures (STOP_RUN in a row, or past STOP_SHARE)

    def failing(self) -> bool:
        """Whether the failures so far stop the load."""
        total = self.errors + len(self.latencies_ms)
        return self.in_a_row >= STOP_RUN or (total >= STOP_MIN and self.errors > STOP_SHARE * total)


def _validate(request: LoadtestRequest) -> None:
    if bool(request.app) == bool(request.url):
        raise LoadtestError(_("Give either a served folder to start or the URL of a running server, not both."))
    if request.url and urlsplit(request.url).scheme not in ("http", "https"):
        raise LoadtestError(
            _("'{url}' is not an http(s) address; give one such as http://127.0.0.1:8000.").format(
                url=request.url[:200]
            )
        )
    if not request.concurrency or any(c < 1 or c > 256 for c in request.concurrency):
        raise LoadtestError(_("Each concurrency must be from 1 to 256, e.g. 1,4,16."))
    if not 0.5 <= request.duration_s <= 600:
        raise LoadtestError(_("The duration per concurrency must be from 0.5 to 600 seconds."))
    check_body(request.body)


def _in_process(session: Any, feeds: dict[str, np.ndarray]) -> list[float]:
    """One call at a time for IN_PROCESS_S (at least IN_PROCESS_CALLS calls), after up to five warm-up calls (a
    quarter of that time at most: a model of a second a call took 25 s here)."""
    began = time.perf_counter()
    for _warm in range(5):
        session.run(None, feeds)
        if time.perf_counter() - began > IN_PROCESS_S / 4:
            break
    samples: list[float] = []
    deadline = time.perf_counter() + IN_PROCESS_S
    while len(samples) < 1000 and (len(samples) < IN_PROCESS_CALLS or time.perf_counter() < deadline):
        start = time.perf_counter_ns()
        session.run(None, feeds)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def run_client(client: Coroutine[Any, Any, T]) -> T:
    """The client's coroutine run on uvloop's event loop where it is installed (not on Windows), which costs a
    request ~0.1 ms less than asyncio's own (benchmarks/serve.py's floor: 0.58-0.69 against 0.65-0.73 ms); in a
    thread of its own where this one runs a loop already (a notebook, a caller's async code)."""
    run: Callable[[Coroutine[Any, Any, T]], T] = asyncio.run
    with contextlib.suppress(ImportError):
        from uvloop import run
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run(client)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run, client).result()


async def _load(
    url: str, body: RequestBody, concurrency: int, duration_s: float, keep: int, rng: random.Random
) -> _Load:
    """``concurrency`` workers posting ``body`` back to back until the time is up (after a warm-up request each, or
    one alone when a round of them would take half the time); a reservoir sample of ``keep`` successful responses
    is kept for checking; the requests still in flight when the time is up are waited for. The client is aiohttp:
    on two cores its own cost per request is 0.9 ms against a server that answers at once, httpx's async one 3 ms
    (benchmarks/serve.py measures it beside every model), which would be counted as the server's."""
    import aiohttp

    load = _Load()
    headers = {"content-type": body.kind} | ({"accept": "application/x-npz"} if body.binary else {})
    connector = aiohttp.TCPConnector(limit=concurrency)
    limit = timeout_s(body.call_ms, concurrency)
    timeout = aiohttp.ClientTimeout(total=limit)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as client:

        async def post() -> tuple[float, int, bytes, Note | str]:
            start = time.perf_counter()
            try:
                async with client.post(url, data=body.content, headers=headers) as response:
                    content = await response.read()
                return (time.perf_counter() - start) * 1e3, response.status, content, ""
            except TimeoutError:
                return (time.perf_counter() - start) * 1e3, 0, b"", timed_out(limit, body.call_ms, concurrency)
            except aiohttp.ClientError as exc:
                return (time.perf_counter() - start) * 1e3, 0, b"", failure(exc)

        warm = concurrency if concurrency * body.call_ms / 1000 <= duration_s / 2 else 1
        await asyncio.gather(*(post() for _warm in range(warm)))
        began = time.perf_counter()
        deadline = began + duration_s

        async def worker() -> None:
            while time.perf_counter() < deadline and not load.stopped:
                ms, status, content, error = await post()
                if status == 200:
                    load.latencies_ms.append(ms)
                    load.seen += 1
                    load.in_a_row = 0
                    if len(load.sampled) < keep:
                        load.sampled.append(content)
                    elif (slot := rng.randrange(load.seen)) < keep:
                        load.sampled[slot] = content
                    continue
                load.errors += 1
                load.in_a_row += 1
                if len(load.examples) < 3:
                    said = f"HTTP {status}: {content[:160].decode('utf-8', 'replace')}" if status else error
                    load.examples.append(said)
                load.stopped = load.stopped or load.failing()

        await asyncio.gather(*(worker() for _w in range(concurrency)))
        load.elapsed_s = time.perf_counter() - began
    return load


def _result(concurrency: int, load: _Load, max_diff: float | None) -> LoadResult:
    data = np.sort(np.asarray(load.latencies_ms, dtype=np.float64))
    nan = float("nan")
    p50, p90, p99 = (float(np.percentile(data, q)) for q in (50, 90, 99)) if data.size else (nan, nan, nan)
    (l50, h50), (l90, h90), (l99, h99) = (quantile_interval(data, q) for q in (0.5, 0.9, 0.99))
    return LoadResult(
        concurrency=concurrency, requests=len(load.latencies_ms), errors=load.errors,
        rps=len(load.latencies_ms) / load.elapsed_s if load.elapsed_s > 0 else 0.0,
        p50_ms=p50, p90_ms=p90, p99_ms=p99, p50_low_ms=l50, p50_high_ms=h50, p90_low_ms=l90, p90_high_ms=h90,
        p99_low_ms=l99, p99_high_ms=h99, checked=len(load.sampled), max_abs_diff=max_diff,
        error_examples=[e.english() if isinstance(e, Note) else e for e in load.examples],
    )  # fmt: skip


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def run_loadtest(request: LoadtestRequest, progress: Callable[[float, str], None] | None = None) -> LoadtestReport:
    """The job: see the module's docstring for the method."""
    report_progress = progress or _silent
    began = time.perf_counter()
    stopped_at: int | None = None
    _validate(request)
    served = Path(request.app) / "session.json" if request.app else None  # the options its server opens with
    config = SessionConfig.from_json(served.read_text()) if served else request.tuned or SessionConfig()
    report_progress(0.02, _("Measuring ONNX Runtime in-process"))
    session = session_for(request.model.path, config)
    feeds = make_inputs(request.model.inputs, 1, request.seed)
    names = [o.name for o in session.get_outputs()]
    base = request.url.rstrip("/").removesuffix("/predict").removesuffix("/generate")
    health: dict[str, Any] = {}
    if request.url:  # at once, before anything is measured: an address that is no model server is never loaded
        health = check_server(base, feeds, names)
    reference = dict(zip(names, session.run(None, feeds), strict=True))
    in_process = np.sort(np.asarray(_in_process(session, feeds)))
    streams = Streamed.of(request, session)  # a language model: /generate is loaded, in tokens
    del session
    content, kind, sent = request_body(feeds, request.body)
    body = RequestBody(content=content, kind=kind, binary=sent != "json", call_ms=float(np.median(in_process)))
    rng = random.Random(request.seed)
    results: list[LoadResult] = []
    notes: list[Note] = []
    with contextlib.ExitStack() as stack:
        if request.app:
            report_progress(0.05, _("Starting the server"))
            base = stack.enter_context(started_app(request.app))
            health = check_server(base, feeds, names)  # the folder may serve another model than the one given
        streaming = streams is not None and isinstance(health.get("generate"), dict)
        if streams is not None and not streaming:
            raise LoadtestError(
                _(
                    "This is a language model: its load is measured in tokens through /generate, and the server at "
                    "{url} has none (it was deployed when its cache was not recognised). Deploy it again: its server "
                    "then streams tokens from /generate."
                ).format(url=base)
            )
        for i, concurrency in enumerate(request.concurrency):
            said = _("Loading the server with {count} concurrent requests").format(count=concurrency)
            report_progress(0.1 + 0.85 * i / len(request.concurrency), said)
            if streams is not None and streaming:
                if not streams.load(base, health["generate"], concurrency, request.duration_s, notes):
                    stopped_at = concurrency
                    break
                continue
            load = run_client(_load(f"{base}/predict", body, concurrency, request.duration_s, request.checks, rng))
            diff = max_diff(load.sampled, reference, body.binary)
            results.append(_result(concurrency, load, diff))
            total = load.errors + len(load.latencies_ms)
            if load.stopped:
                stopped_at = concurrency
                notes.append(_stopped(load, concurrency, results))
                break
            if load.errors:
                notes.append(
                    warning(ERRORS, count=load.errors, total=total, concurrency=concurrency, example=load.examples[0])
                )
            if diff is not None and diff > 1e-4:
                notes.append(warning(DIFFERS, checked=len(load.sampled), concurrency=concurrency, diff=f"{diff:.3g}"))
    if costs := json_costs(results, float(np.median(in_process)), feeds, sent != "json"):
        notes.append(costs)
    low, high = median_interval(in_process)
    return LoadtestReport(
        id=uuid.uuid4().hex[:12], model=request.model.name or Path(request.model.path).name,
        model_id=request.model.id, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        target=base if request.url else "", started_app=bool(request.app), body=sent,
        duration_s=request.duration_s, results=results, in_process_p50_ms=float(np.median(in_process)),
        in_process_low_ms=low, in_process_high_ms=high, in_process_calls=int(in_process.size), session=config,
        environment=environment([config.intra_op_threads]), notes=notes, seconds=time.perf_counter() - began,
        stopped_at=stopped_at, served_providers=[str(p) for p in health.get("providers", [])],
        **(streams.report() if streams is not None and streaming else {}),
    )  # fmt: skip


def _stopped(load: _Load, concurrency: int, results: list[LoadResult]) -> Note:
    """The note that says the load stopped on a run of failures; a LoadtestError when no request was answered at
    all (the server fails every request: nothing was measured)."""
    total = load.errors + len(load.latencies_ms)
    if not any(r.requests for r in results):
        raise LoadtestError(
            _(
                "The server failed every request: {count} of {total} at concurrency {concurrency} (the first: "
                "{example}), so the load stopped and nothing was measured. Send it the same request yourself to see "
                "why."
            ).format(count=load.errors, total=total, concurrency=concurrency, example=_said(load.examples[0]))
        )
    return warning(STOPPED, concurrency=concurrency, count=load.errors, total=total, example=load.examples[0])


def _said(example: Note | str) -> str:
    """A failure's example in a message: a note said in the reader's language, a server's words as it wrote them."""
    return say(example) if isinstance(example, Note) else example[:200]


def percentile_text(value: float, low: float, high: float) -> str:
    """A percentile with its 95 % interval ("3.1 (2.9–3.3)"), or in words when no request was answered (never
    "nan")."""
    if not all(math.isfinite(v) for v in (value, low, high)):
        return _("no request answered")
    return f"{significant(value)} ({significant(low)}–{significant(high)})"


def _lowest_answered(results: list[LoadResult]) -> LoadResult | None:
    """The result at the lowest concurrency that answered a request (the one compared with in-process), or None."""
    return min((r for r in results if r.requests), key=lambda r: r.concurrency, default=None)


def json_costs(results: list[LoadResult], in_process_ms: float, feeds: dict[str, np.ndarray], npy: bool) -> Note | None:
    """The note that says .npy, when a JSON body of the one input cost more than JSON_COSTS_MS and more than the
    call itself at the lowest concurrency (a 1x3x224x224 image: 106 ms of HTTP and JSON against an 8 ms call), else
    None (an .npy body, a small input, a model of several inputs: the load test sends .npy for one input only)."""
    first = _lowest_answered(results)
    if npy or len(feeds) != 1 or first is None:
        return None
    overhead = first.p50_ms - in_process_ms
    if overhead <= max(JSON_COSTS_MS, in_process_ms):
        return None
    return warning(
        JSON_COSTS, overhead=overhead, p50=first.p50_ms, concurrency=first.concurrency,
        count=int(next(iter(feeds.values())).size),
    )  # fmt: skip


def headline(report: LoadtestReport) -> Note:
    """The one sentence a reader wants, as a note: the served p50 at the lowest concurrency against in-process, and
    the best throughput."""
    if report.tokens:
        return tokens_headline(report.tokens) or warning(NO_ANSWER)
    first = _lowest_answered(report.results)
    if first is None:
        return warning(NO_ANSWER)
    best = max((r for r in report.results if r.requests), key=lambda r: r.rps)
    return note(
        HEADLINE, p50=first.p50_ms, concurrency=first.concurrency, local=report.in_process_p50_ms,
        body=report.body.upper(), overhead=first.p50_ms - report.in_process_p50_ms, rps=round(best.rps),
        best=best.concurrency,
    )  # fmt: skip
