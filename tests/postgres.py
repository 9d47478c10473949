"""A throwaway PostgreSQL server for the tests: Debian's binaries, a cluster in a temporary folder, listening on
127.0.0.1 at a free port, a role with a password and a database per test. ``make postgres`` installs it.

PostgreSQL refuses to run as root, so as root its commands run as the ``postgres`` system user (runuser).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["Postgres", "find_bin", "postgres_server"]

USER, PASSWORD = "workbench", "s3cret-pw"
_SETTINGS = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{socket}'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 60
shared_buffers = 32MB
logging_collector = off
"""


def find_bin() -> Path | None:
    """The folder of the newest PostgreSQL this machine has (Debian keeps each major version apart)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Postgres:
    """One cluster, started by ``start()`` and removed by ``remove()``; ``stop()``/``start()`` in between."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="workbench-pg-"))
        self.data, self.socket, self.log = self.root / "data", self.root / "socket", self.root / "server.log"
        self.port = _free_port()
        self._as_postgres = os.getuid() == 0
        self.socket.mkdir()
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self.socket, "postgres", "postgres")

    def _run(self, *command: str, timeout: float = 60) -> str:
        prefix = ["runuser", "-u", "postgres", "--"] if self._as_postgres else []
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        return done.stdout

    def init(self) -> None:
        """A new cluster: trust over the socket (to make the role), passwords over TCP (what the store uses)."""
        options = ["--username=postgres", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"]
        self._run(str(self.bin / "initdb"), "-D", str(self.data), *options, "--encoding=UTF8", "--locale=C.UTF-8")
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(_SETTINGS.format(port=self.port, socket=self.socket))
        self.start()
        self.psql(f"CREATE ROLE {USER} LOGIN CREATEDB PASSWORD '{PASSWORD}'")

    def start(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "30", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        prefix = ["runuser", "-u", "postgres", "--"] if self._as_postgres else []
        status = [str(self.bin / "pg_ctl"), "-D", str(self.data), "status"]
        return subprocess.run([*prefix, *status], capture_output=True, timeout=30).returncode == 0

    def psql(self, sql: str) -> str:
        server = f"host={self.socket} port={self.port} user=postgres dbname=postgres"
        return self._run(str(self.bin / "psql"), "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql, server)

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database owned by the test role: its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=USER, password=PASSWORD, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def remove(self) -> None:
        if self.data.exists() and self.running():
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    """A PostgreSQL server for the whole session (started on first use, removed at the end)."""
    bin_dir = find_bin()
    if bin_dir is None:
        pytest.fail(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run `make test`, which installs "
            "Debian's postgresql package first (or `make postgres`).",
            pytrace=False,
        )
    server = Postgres(bin_dir)
    try:
        server.init()
        yield server
    finally:
        server.remove()
