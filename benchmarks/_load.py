"""The load generator of the queue benchmarks: raters doing claim + submit over raw
keep-alive HTTP/1.1 connections, in a closed loop (back to back) or an open loop (Poisson
arrivals), and the statistics they gather.

A cycle is one stored rating. Two flows: ``split``, a claim request then a submit
request (an API client that claims on its own); ``page``, what the rating page does: a
claim once, then every submit also claims the next pair (``claim_next_kind``) and asks
for the rater's progress (``progress_tz``), one request per rated item while pairs come.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections import deque


class Connection:
    """One keep-alive HTTP/1.1 connection speaking just enough of the protocol."""

    def __init__(self, port: int):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, path: str, token: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.write(
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (path.encode(), token.encode(), len(body), body)
        )
        status_line = await self.reader.readline()
        if not status_line:
            self.close()
            raise ConnectionError("server closed the connection")
        status = int(status_line.split(b" ", 2)[1])
        length, close = 0, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        payload = await self.reader.readexactly(length) if length else b""
        if close:
            self.close()
        return status, payload

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Stats:
    def __init__(self):
        self.claim_ms: list[float] = []
        self.send_lag_ms: list[float] = []  # open loop: how late the generator sent a due cycle
        self.submit_ms: list[float] = []
        self.cycles = 0
        self.cycles_by_rater: dict[str, int] = {}  # who was served how much: keep-alive fairness
        self.errors: dict[str, int] = {}
        self.empty = 0

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


SUBMIT_TEMPLATE = (
    '{"score": %.3f, "time_on_item_ms": 17000, "time_to_first_move_ms": 900, "adjustments": 3, "idempotency_key": "%s"}'
)


async def cycle(conn: Connection, token: str, stats: Stats, started: float, rng: random.Random) -> bool:
    """Claim then submit. ``started`` is when the cycle was due (open loop) or sent."""
    status, payload = await conn.request("/api/rate/bench/claim/", token, b"{}")
    claimed = time.perf_counter()
    if status == 204:
        stats.empty += 1
        return False
    if status != 200:
        stats.error(f"claim {status}")
        return False
    stats.claim_ms.append((claimed - started) * 1000)
    slot = json.loads(payload)["slot_id"]
    body = (SUBMIT_TEMPLATE % (rng.uniform(0, 5), uuid.uuid4().hex)).encode()
    status, _ = await conn.request(f"/api/rate/bench/slots/{slot}/submit/", token, body)
    if status != 201:
        stats.error(f"submit {status}")
        return False
    stats.submit_ms.append((time.perf_counter() - claimed) * 1000)
    stats.cycles += 1
    stats.cycles_by_rater[token] = stats.cycles_by_rater.get(token, 0) + 1
    return True


PAGE_SUBMIT_TEMPLATE = SUBMIT_TEMPLATE[:-1] + ', "claim_next_kind": "SIS", "progress_tz": "Europe/Berlin"}'
PAGE_CLAIM = b'{"kind": "SIS", "progress_tz": "Europe/Berlin"}'
FLOWS = ("split", "page")


async def page_cycles(conn: Connection, token: str, stats: Stats, deadline: float, rng: random.Random) -> None:
    """The rating page's flow until ``deadline``: claim, then submits that each claim the
    next pair. ``claim_ms`` holds each submit's time until the next pair was there."""
    slot = None
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        if slot is None:
            status, payload = await conn.request("/api/rate/bench/claim/", token, PAGE_CLAIM)
            if status == 204:
                stats.empty += 1
                await asyncio.sleep(0.05)
                continue
            if status != 200:
                stats.error(f"claim {status}")
                continue
            slot = json.loads(payload)["slot_id"]
            started = time.perf_counter()
        body = (PAGE_SUBMIT_TEMPLATE % (rng.uniform(0, 5), uuid.uuid4().hex)).encode()
        status, payload = await conn.request(f"/api/rate/bench/slots/{slot}/submit/", token, body)
        slot = None
        if status != 201:
            stats.error(f"submit {status}")
            continue
        answer = json.loads(payload)
        if "progress" not in answer:
            stats.error("submit without progress")
        if answer["next"] is not None:
            slot = answer["next"]["slot_id"]
            stats.claim_ms.append((time.perf_counter() - started) * 1000)
        stats.cycles += 1
        stats.cycles_by_rater[token] = stats.cycles_by_rater.get(token, 0) + 1


async def closed_loop(port: int, tokens: list[str], seconds: float, stats: Stats, flow: str = "split") -> float:
    """Each token a rater rating back to back in ``flow`` (see the module's docstring);
    adds to ``stats``. Returns the seconds it ran."""
    if flow not in FLOWS:
        raise ValueError(f"flow {flow!r}: use one of {', '.join(FLOWS)}")
    deadline = time.perf_counter() + seconds

    async def rater(token: str, seed: int) -> None:
        conn, rng = Connection(port), random.Random(seed)
        if flow == "page":
            await page_cycles(conn, token, stats, deadline, rng)
        else:
            while time.perf_counter() < deadline:
                await cycle(conn, token, stats, time.perf_counter(), rng)
        conn.close()

    started = time.perf_counter()
    await asyncio.gather(*(rater(t, i) for i, t in enumerate(tokens)))
    return time.perf_counter() - started


async def open_loop(port: int, idle_raters: deque[str], rate: float, seconds: float, stats: Stats, seed: int) -> None:
    """Poisson arrivals at ``rate`` cycles/s, each by a rater taken from (and given back
    to) ``idle_raters``, over a pool of keep-alive connections. Latency counts from when
    the cycle was due."""
    rng = random.Random(seed)
    idle_conns: deque[Connection] = deque()
    running: set[asyncio.Task] = set()

    async def one(due: float, token: str) -> None:
        conn = idle_conns.popleft() if idle_conns else Connection(port)
        stats.send_lag_ms.append((time.perf_counter() - due) * 1000)
        try:
            await cycle(conn, token, stats, due, rng)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            stats.error(type(exc).__name__)
            conn.close()
        idle_conns.append(conn)
        idle_raters.append(token)

    due = time.perf_counter()
    end = due + seconds
    while True:
        due += rng.expovariate(rate)
        if due >= end:
            break
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if not idle_raters:
            stats.error("no idle rater")
            continue
        task = asyncio.create_task(one(due, idle_raters.popleft()))
        running.add(task)
        task.add_done_callback(running.discard)
    await asyncio.gather(*running)
    for conn in idle_conns:
        conn.close()


def rater_spread(stats: Stats) -> float | None:
    """Cycles of the most served rater over those of the least served, in a closed loop
    where every rater asks back to back: 1.0 is an even share; raters whose keep-alive
    connections sit on a busy server process show as a spread above 1."""
    counts = list(stats.cycles_by_rater.values())
    if not counts or min(counts) == 0:
        return None
    return round(max(counts) / min(counts), 2)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
