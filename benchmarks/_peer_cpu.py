"""Server CPU over a phase of the peer benchmark (``Meter``): a server's process tree and
the PostgreSQL backends of its database, short-lived ones included (``BackendSampler``,
for a server that opens them: ``Meter.sample_backends``).

``_cpu.cpu_reading`` reads the backends alive at a phase's start and end and what the
postmaster reaped in between (every backend that ended, whatever its database); Label
Studio's server opens a connection per request (Django's default CONN_MAX_AGE=0), so
nearly all its database CPU is spent in such backends. This sampler, a second
reading of the same, polls the postmaster's children from /proc every ``interval``
seconds in a thread of its own and keeps each backend's last reading, so a backend
that ends between two polls still counts up to its last poll (what it spent
after that is missed: at most ``interval`` of each backend's life; a backend that lives
less than ``interval`` may be missed whole). Processes are matched to the database by
their title (``postgres: [cluster: ]user database host(port) state``).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from _cpu import TICKS_PER_S, _children, _stat_fields, cpu_reading, cpu_spent, process_tree_ticks

TITLE = re.compile(r"^postgres: (?:\S+: )?\S+ (\S+) \S+\(\d+\)")


def _database_of(pid: int) -> str | None:
    """The database a backend serves; "" for another kind of postgres process; None when
    it cannot be told yet (gone, or just forked and still showing the postmaster's
    command line)."""
    try:
        title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    if not title.startswith("postgres: "):
        return None
    match = TITLE.match(title)
    return match.group(1) if match else ""


class BackendSampler:
    """Counts the CPU ticks of ``database``'s backends between ``start()`` and ``stop()``:
    a backend alive at the start from its reading then, one born later from zero. A
    process is known by its pid and start time, so a reused pid is a new process."""

    def __init__(self, postmaster: int, database: str, interval: float = 0.01):
        self.postmaster, self.database, self.interval = postmaster, database, interval
        self._base: dict[tuple[int, int], int] = {}
        self._last: dict[tuple[int, int], int] = {}
        self._foreign: set[tuple[int, int]] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.backends_born = 0

    def _poll(self, *, first: bool = False) -> None:
        for pid in _children(self.postmaster):
            fields = _stat_fields(pid)
            if fields is None:
                continue
            # After the name: utime(11) stime(12) ... starttime(19).
            key, ticks = (pid, int(fields[19])), int(fields[11]) + int(fields[12])
            if key in self._foreign:
                continue
            if key not in self._last:
                database = _database_of(pid)
                if database != self.database:
                    if database is not None:
                        self._foreign.add(key)
                    continue
                self._base[key] = ticks if first else 0
                self.backends_born += 0 if first else 1
            self._last[key] = ticks

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._poll()

    def start(self) -> None:
        self._poll(first=True)
        self._thread = threading.Thread(target=self._run, name="backend-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> float:
        """Seconds of CPU the database's backends spent since ``start()``."""
        self._stop.set()
        self._thread.join()
        self._poll()
        return sum(self._last[key] - self._base[key] for key in self._last) / TICKS_PER_S


@dataclass
class Meter:
    """A server's CPU over a phase: its process tree, and with a database its backends;
    beside it ``client_s``, this process's own (the load generator's, and the backend
    sampler's), which shares the cores.

    ``sample_backends``: the server opens a connection per request (Label Studio), so
    the backends are also polled (``BackendSampler``). A server whose connections last
    the phase (ours) is read at its ends only: those readings miss none of its backends,
    and the poll (every 10 ms: 5.6 % of a core with four PostgreSQL processes, more with
    more) would come out of the cores the server under test shares with this process."""

    web_root: int
    cursor: object = None
    database: str | None = None
    postmaster: int | None = None
    sample_backends: bool = False

    def begin(self):
        if self.database is None:
            return process_tree_ticks(self.web_root), None, time.process_time()
        sampler = BackendSampler(self.postmaster, self.database) if self.sample_backends else None
        if sampler is not None:
            sampler.start()
        before = cpu_reading(web_root=self.web_root, cursor=self.cursor, database=self.database)
        return before, sampler, time.process_time()

    def end(self, begun) -> dict:
        before, sampler, client_before = begun
        if self.database is None:
            ticks = process_tree_ticks(self.web_root) - before
            spent = {"web_s": ticks / TICKS_PER_S, "db_s": 0.0, "db_live_s": 0.0, "db_sampled_s": 0.0}
        else:
            sampled = None if sampler is None else sampler.stop()
            server = cpu_spent(before, cpu_reading(web_root=self.web_root, cursor=self.cursor, database=self.database))
            # Both readings can only miss backend time: the larger is the closer.
            db_s = server["db_s"] if sampled is None else max(server["db_s"], sampled)
            spent = {"web_s": server["web_s"], "db_s": db_s, "db_live_s": server["db_s"], "db_sampled_s": sampled}
        return spent | {"client_s": time.process_time() - client_before}
