"""A peer on the cluster's network that tries what the hostile tester did: join the cluster at ADDRESS and run a
task pinned to the head, as root, that copies ``/etc/shadow`` into MARKER. Run with whatever token (or none) its
environment gives it: ``python -m tests.cluster.peer ADDRESS MARKER``. Prints one JSON object: how it ended.

It gives Ray one try to join (``RAY_gcs_server_port_wait_time_s=1``, set by the test), where Ray's own default
retries for 20 s: what is tested is the answer, not the patience."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def attempt(address: str, marker: str) -> dict[str, Any]:
    import ray

    began = time.monotonic()
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except Exception as exc:  # ConnectionError from ray.init, AuthenticationError from its GCS client
        return {"joined": False, "error": type(exc).__name__, "seconds": round(time.monotonic() - began, 1)}

    @ray.remote(num_cpus=0, resources={"workbench-target:head": 0.001})
    def steal() -> str:
        Path(marker).write_text(Path("/etc/shadow").read_text())
        return "ran"

    try:
        return {"joined": True, "ran": ray.get(steal.remote(), timeout=60)}
    except Exception as exc:
        return {"joined": True, "ran": None, "error": type(exc).__name__}


if __name__ == "__main__":
    print(json.dumps(attempt(*sys.argv[1:3])), flush=True)
