"""What the machine was doing while we measured: the other processes' CPU use, the load, and each call's CPU time.

A latency measured while something else runs on the same cores is the other thing's latency too. The worker
cannot see other processes (its sandbox has its own PID namespace), but the kernel's counters are
machine-wide: /proc/stat gives the CPU time every process spent, and our own CPU time comes from the process
itself; the difference is what others used. /proc/loadavg gives the run-queue length. Linux only; elsewhere the
record says it could not tell.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from core.i18n import N_
from core.notes import Note, note, warning

__all__ = ["BUSY", "BUSY_CORES", "MIN_SECONDS", "QUIET", "SHORT", "UNKNOWN", "Activity", "ActivityMeter"]

# Other processes using more than this many cores' worth of CPU, or more than a quarter of the cores we did not
# use, make a measurement "busy": its numbers are the other work's as much as the model's.
BUSY_CORES = 0.5
MIN_SECONDS = 0.5  # the kernel counts CPU time in ticks of 10 ms: a shorter measurement cannot be judged

# what a record says about the machine: a note (key and values), said in its reader's language where it is shown
SHORT = N_("The measurement took {seconds} s, too short to tell what else the machine did.")
UNKNOWN = N_("The machine's CPU counters could not be read here, so other work is not known.")
BUSY = N_(
    "Other processes kept {others} of the {cores} cores busy during the measurement (load {before} → {after}): the "
    "numbers are theirs as much as the model's."
)
QUIET = N_("The machine was quiet: other processes used {others} of {cores} cores.")


@dataclass(kw_only=True)
class Activity:
    """The machine during one measurement."""

    seconds: float  # wall time of the measurement
    cores: int
    others_cores: float  # CPU seconds other processes used per second: how many cores they kept busy
    own_cores: float  # the same for this process (all its threads)
    load_before: float  # 1-minute load average when it began and ended
    load_after: float
    known: bool = True  # False where the kernel's counters could not be read
    busy: bool = False
    note: Note | None = None  # what the machine did, said where it is shown (None in runs saved before it)


def _busy_jiffies() -> int | None:
    """Machine-wide CPU time spent on anything but idle and I/O wait, in clock ticks."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice; guest time is counted in user already
    return sum(values[:8]) - values[3] - values[4]


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


class ActivityMeter:
    """Start it before the measured calls and ``stop()`` it after: what the machine did in between."""

    def __init__(self) -> None:
        self._wall = time.perf_counter()
        self._own = time.process_time()
        self._busy = _busy_jiffies()
        self._load = _load()

    def stop(self) -> Activity:
        seconds = max(time.perf_counter() - self._wall, 1e-9)
        own = (time.process_time() - self._own) / seconds
        busy_after = _busy_jiffies()
        cores = os.cpu_count() or 1
        if seconds < MIN_SECONDS or self._busy is None or busy_after is None:  # nothing to judge it by
            unknown = note(SHORT, seconds=f"{seconds:.2f}") if seconds < MIN_SECONDS else note(UNKNOWN)
            return Activity(
                seconds=seconds,
                cores=cores,
                others_cores=0.0,
                own_cores=own,
                load_before=self._load,
                load_after=_load(),
                known=False,
                note=unknown,
            )
        everyone = (busy_after - self._busy) / os.sysconf("SC_CLK_TCK") / seconds
        others = min(float(cores), max(0.0, everyone - own))
        free = max(cores - own, 1.0)
        busy = others > BUSY_CORES and others > 0.25 * free
        said = (
            warning(BUSY, others=f"{others:.1f}", cores=cores, before=f"{self._load:.1f}", after=f"{_load():.1f}")
            if busy
            else note(QUIET, others=f"{others:.2f}", cores=cores)
        )
        return Activity(
            seconds=seconds,
            cores=cores,
            others_cores=round(others, 3),
            own_cores=round(own, 3),
            load_before=self._load,
            load_after=_load(),
            busy=busy,
            note=said,
        )
