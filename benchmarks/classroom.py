"""A classroom of 30 on one server: every participant joins a room with its code and a display name, keeps
clicking through pages, and some of them run a benchmark at the same moment, so that the benchmarks queue.

Each session is a websocket client speaking Streamlit's own protocol (BackMsg / ForwardMsg, as the browser
does), without a browser: the server does all the work it does for a browser, and the 2-core machine is not
spent on rendering 30 Chromium tabs. Page response is the time from asking for a page (a rerun) to the server's
"script finished". Prints p50 / p95 / max page response while benchmarks queued and the places (and waits) the
queued participants were shown.

Run: nice .venv/bin/python benchmarks/classroom.py [--users 30] [--benchmarks 6] [--think 3]
(starts its own server, with a workshop on, on a free port)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_AHEAD = re.compile(r"(\d+) jobs? ahead of yours(?: · about (\d+) s to wait)?")


@dataclass
class Stats:
    pages: list[tuple[float, float]] = field(default_factory=list)  # (when it finished, seconds)
    places: list[tuple[int, int | None]] = field(default_factory=list)  # (jobs ahead, seconds to wait shown)
    bench_window: list[float] = field(default_factory=list)  # when benchmarks were asked for and done
    errors: list[str] = field(default_factory=list)


class Session:
    """One browser session, over Streamlit's websocket."""

    def __init__(self, url: str, stats: Stats) -> None:
        self.url, self.stats = url, stats
        self.ws: Any = None
        self.elements: dict[str, Any] = {}  # widget id -> its element proto, from the last run

    async def connect(self) -> None:
        import websockets

        ws_url = self.url.replace("http", "ws") + "/_stcore/stream"
        self.ws = await websockets.connect(
            ws_url, subprotocols=["streamlit"], origin=self.url, max_size=None, open_timeout=120, ping_interval=None
        )  # no keepalive pings: a server busy for 20 s is measured, not disconnected

    async def run(self, page: str = "", widgets: list[Any] | None = None, query: str = "") -> float:
        """Ask for ``page`` with ``widgets`` set; the seconds until its run finished (reruns it asked for
        included)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        for widget in widgets or []:
            msg.rerun_script.widget_states.widgets.append(widget)
        start = time.monotonic()
        await self.ws.send(msg.SerializeToString())
        self.elements = {}
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(await asyncio.wait_for(self.ws.recv(), timeout=900))
            kind = forward.WhichOneof("type")
            if kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                self._remember(forward.delta.new_element)
            elif kind == "delta" and forward.delta.WhichOneof("type") == "add_block":
                self._remember(forward.delta.add_block)
            if kind == "script_finished":
                if forward.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                    return time.monotonic() - start
                if forward.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise RuntimeError("the page did not compile")

    def _remember(self, element: Any) -> None:
        kind = element.WhichOneof("type") if "type" in element.DESCRIPTOR.oneofs_by_name else None
        inner = getattr(element, kind) if kind else None
        widget_id = getattr(inner, "id", "") if inner is not None else ""
        if widget_id:
            self.elements[widget_id] = inner
        from google.protobuf import text_format

        text = text_format.MessageToString(element, as_utf8=True)
        for ahead, wait in _AHEAD.findall(text):
            self.stats.places.append((int(ahead), int(wait) if wait else None))

    def widget(self, key: str) -> str:
        found = next((i for i in self.elements if i.endswith(f"-{key}")), None)
        if found is None:
            raise LookupError(f"no widget with key {key!r} on the page ({len(self.elements)} widgets)")
        return found

    async def timed(self, page: str = "", widgets: list[Any] | None = None) -> None:
        seconds = await self.run(page, widgets)
        self.stats.pages.append((time.monotonic(), seconds))


def _state(widget_id: str, **value: Any) -> Any:
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    state = WidgetState(id=widget_id)
    for name, v in value.items():
        setattr(state, name, v)
    return state


async def _participant(url: str, n: int, code: str, stats: Stats, bench: asyncio.Event | None, think: float,
                       stop: asyncio.Event) -> None:  # fmt: skip
    s = Session(url, stats)
    try:
        await s.connect()
        await s.timed()  # the landing page
        join = [
            _state(s.widget("room_code"), string_value=code),
            _state(s.widget("room_name"), string_value=f"participant {n}"),
            _state(s.widget("room_join_button"), trigger_value=True),
        ]
        await s.timed(widgets=join)
        if bench is not None:
            await bench.wait()  # everyone who benchmarks presses at once
            await _benchmark(s, stats)
        pages = ["model", "classroom", "benchmark", "model"]
        turn = 0
        while not stop.is_set():
            await asyncio.sleep(think)
            await s.timed(pages[turn % len(pages)])
            turn += 1
    except Exception as exc:
        stats.errors.append(f"participant {n}: {type(exc).__name__}: {exc}")
    finally:
        if s.ws is not None:
            await s.ws.close()


async def _benchmark(s: Session, stats: Stats) -> None:
    """Export the room's sample and run a short benchmark (its place in the queue is seen on the way)."""
    await s.run("benchmark")
    if any(i.endswith("-export_defaults") for i in s.elements):
        await s.run("benchmark", [_state(s.widget("export_defaults"), trigger_value=True)])
    submit = next(
        i for i, e in s.elements.items() if getattr(e, "is_form_submitter", False) and e.form_id == "bench_form"
    )
    widgets = [
        _state(s.widget("bench_iters"), int_value=50),
        _state(s.widget("bench_warmup"), int_value=5),
        _state(s.widget("bench_budget"), int_value=10),
        _state(submit, trigger_value=True),
    ]
    stats.bench_window.append(time.monotonic())
    await s.run("benchmark", widgets)
    stats.bench_window.append(time.monotonic())


async def _class(url: str, users: int, benchmarks: int, think: float, code: str) -> Stats:
    stats = Stats()
    go, stop = asyncio.Event(), asyncio.Event()
    tasks = [
        asyncio.create_task(_participant(url, n, code, stats, go if n < benchmarks else None, think, stop))
        for n in range(users)
    ]
    await asyncio.sleep(20)  # everyone has joined (or is still joining: that load counts too)
    go.set()
    while len(stats.bench_window) < 2 * benchmarks and not all(t.done() for t in tasks[:benchmarks]):
        await asyncio.sleep(1)
    await asyncio.sleep(think * 2)
    stop.set()
    await asyncio.gather(*tasks)
    return stats


def report(stats: Stats, users: int, benchmarks: int) -> None:
    start, end = (min(stats.bench_window), max(stats.bench_window)) if stats.bench_window else (0.0, float("inf"))
    during = sorted(s for when, s in stats.pages if start <= when <= end)
    every = sorted(s for _when, s in stats.pages)

    def line(name: str, values: list[float]) -> str:
        if not values:
            return f"{name}: no page runs"
        p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
        return (f"{name}: {len(values)} page runs, p50 {statistics.median(values):.2f} s, p95 {p95:.2f} s, "
                f"max {values[-1]:.2f} s")  # fmt: skip

    import os

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{users} sessions in one room, {benchmarks} benchmarking at once; {os.cpu_count()} cores, load {load}")
    print(line("while benchmarks queued", during))
    print(line("whole run", every))
    places = sorted({p for p, _w in stats.places}, reverse=True)
    waits = [w for _p, w in stats.places if w is not None]
    print(f"queue places shown: {places or 'none'}; waits shown: {min(waits, default=0)}–{max(waits, default=0)} s")
    print(f"benchmarks queued for {end - start:.0f} s" if stats.bench_window else "no benchmark ran")
    for error in stats.errors:
        print("ERROR", error)


def main() -> None:
    from benchmarks._server import running_app
    from core.classroom import Rooms, RoomSetup
    from core.store import Store

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--benchmarks", type=int, default=6)
    parser.add_argument("--think", type=float, default=3.0, help="seconds between a participant's clicks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        setup = RoomSetup(name="load", model="sample:tinycnn", pages=("model", "export", "benchmark"), language="")
        code = Rooms(Store(f"sqlite:///{data / 'history.sqlite'}").engine).open(setup, hours=2).code
        with running_app(data, workshop="true", facilitator_key="load-test") as (url, _pid):
            stats = asyncio.run(_class(url, args.users, args.benchmarks, args.think, code))
        pooled = Rooms(Store(f"sqlite:///{data / 'history.sqlite'}").engine).entries(code)
    report(stats, args.users, args.benchmarks)
    print(f"results pooled on the room board: {len(pooled)}")


if __name__ == "__main__":
    main()
