"""A PostgreSQL server of a test's own, to stop and start under load: initdb into a new
folder, pg_ctl on a free port of 127.0.0.1 (TCP only), as the ``postgres`` OS user when
the tests run as root (PostgreSQL refuses to run as root). The machine's PostgreSQL and
the other tests' databases are never touched.

Without PostgreSQL's server programs (/usr/lib/postgresql/<version>/bin) a test skips,
and fails under CI (REQUIRE_SERVICES=1)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.database_outage import closed_port

BIN_GLOB = "/usr/lib/postgresql/*/bin"


def server_programs() -> Path:
    """The newest installed PostgreSQL's bin folder holding initdb and pg_ctl."""
    found = [p for p in Path("/").glob(BIN_GLOB.lstrip("/")) if (p / "initdb").is_file() and (p / "pg_ctl").is_file()]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)  # 9.6 sorts first
    if not found:
        message = f"no PostgreSQL server programs (initdb, pg_ctl) under {BIN_GLOB}"
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found[-1]


class OwnPostgres:
    """A server in a fresh folder, made with ``create`` and removed with ``remove``.
    ``fsync=off``: an immediate stop kills the server's processes, not the machine, so
    what was written to the kernel (every acknowledged commit's WAL) survives it."""

    def __init__(self):
        self.bin = server_programs()
        self.folder = Path(tempfile.mkdtemp(prefix="cxc-own-postgres-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.port = closed_port()  # free: nothing listens there yet
        # PostgreSQL will not run as root: its programs then run as the postgres user.
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            account = pwd.getpwnam("postgres")
            os.chown(self.folder, account.pw_uid, account.pw_gid)

    @property
    def url(self) -> str:
        """The URL of its ``postgres`` database (DATABASE_URL's form)."""
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *arguments: str) -> None:
        command = [*self.as_user, str(self.bin / program), *arguments]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            log = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}\n{log}")

    def create(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.start()

    def start(self) -> None:
        """Start and wait until it accepts connections."""
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")

    def stop_immediately(self) -> None:
        """``pg_ctl stop -m immediate``: every server process ends at once, as in a crash;
        the next start recovers from the WAL."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
