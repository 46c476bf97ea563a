"""HTTP side of the CxC field check (benchmarks/field_cxc_val.py): a free port for its
the web server, a small synchronous API client for the admin's calls, and scripted raters that
rate until the queue is empty (asyncio, keep-alive connections from _load)."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import random
import socket
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from _load import Connection

# A rater gives up after this many failures in a row (and says so), instead of looping.
MAX_FAILURES_IN_A_ROW = 20
PROGRESS_EVERY_S = 30.0


def log(message: str) -> None:
    print(message, flush=True)


# --- server ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- admin client ---------------------------------------------------------------------------


class ApiError(RuntimeError):
    pass


class Api:
    """One keep-alive connection; JSON in and out, multipart uploads, file downloads."""

    def __init__(self, port: int, token: str | None = None, timeout: float = 900):
        self.port, self.token, self.timeout = port, token, timeout
        self._conn: http.client.HTTPConnection | None = None

    def call(self, method: str, path: str, body: bytes | None = None, content_type: str = "") -> tuple[int, bytes]:
        headers = {"Host": "127.0.0.1"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        if content_type:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):  # a kept-alive connection the server closed is opened again once
            if self._conn is None:
                self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self._conn.request(method, path, body=body, headers=headers)
                response = self._conn.getresponse()
                return response.status, response.read()
            except (ConnectionError, http.client.RemoteDisconnected):
                self._conn.close()
                self._conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, payload: dict | None = None, expect: tuple[int, ...] = (200,)):
        body = json.dumps(payload).encode() if payload is not None else None
        status, data = self.call(method, path, body, "application/json" if body is not None else "")
        if status not in expect:
            raise ApiError(f"{method} {path}: HTTP {status}: {data[:2000].decode(errors='replace')}")
        return json.loads(data) if data else None

    def upload(self, path: str, fields: dict[str, str], file_field: str, file: Path) -> dict:
        boundary = uuid.uuid4().hex
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
            for name, value in fields.items()
        ]
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{file.name}"\r\n'
            "Content-Type: text/csv\r\n\r\n".encode()
            + file.read_bytes()
            + b"\r\n"
        )
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        status, data = self.call("POST", path, body, f"multipart/form-data; boundary={boundary}")
        if status != 201:
            raise ApiError(f"POST {path} ({file.name}): HTTP {status}: {data[:2000].decode(errors='replace')}")
        return json.loads(data)

    def download(self, url: str, target: Path) -> int:
        path = urlparse(url).path
        status, data = self.call("GET", path)
        if status != 200:
            raise ApiError(f"GET {path}: HTTP {status}: {data[:500].decode(errors='replace')}")
        target.write_bytes(data)
        return len(data)

    def poll(self, path: str, done: tuple[str, ...] = ("succeeded", "failed"), seconds: float = 1800) -> dict:
        deadline = time.monotonic() + seconds
        while True:
            state = self.json("GET", path)
            if state["status"] in done:
                return state
            if time.monotonic() > deadline:
                raise ApiError(f"GET {path}: still {state['status']} after {seconds:.0f} s")
            time.sleep(1.0)


def token_for(port: int, username: str, password: str) -> str:
    return Api(port).json("POST", "/api/auth/token/", {"username": username, "password": password})["token"]


# --- scripted raters ------------------------------------------------------------------------


@dataclass
class RatingStats:
    ratings: int = 0
    replayed: int = 0
    claims: int = 0
    resumed: int = 0
    errors: Counter = field(default_factory=Counter)
    gave_up: list[str] = field(default_factory=list)


def submission(rng: random.Random, kind: str) -> bytes:
    """A random score in [0, 5] with plausible timings; asks for the next pair of ``kind``."""
    on_item = rng.randint(2_000, 40_000)
    return json.dumps(
        {
            "score": round(rng.uniform(0.0, 5.0), 4),
            "time_on_item_ms": on_item,
            "time_to_first_move_ms": rng.randint(200, on_item),
            "adjustments": rng.randint(1, 12),
            "idempotency_key": uuid.uuid4().hex,
            "claim_next_kind": kind,
        }
    ).encode()


async def _send(conn: Connection, path: str, token: str, body: bytes, stats: RatingStats) -> tuple[int, bytes]:
    """One request; a dropped connection is opened again and the request repeated (a
    submit carries its idempotency key, so a repeat stores nothing twice)."""
    for attempt in range(3):
        try:
            return await conn.request(path, token, body)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            stats.errors[f"connection {type(exc).__name__}"] += 1
            conn.close()
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


async def rate_until_empty(port: int, dataset: str, username: str, token: str, seed: int, stats: RatingStats) -> None:
    """Claim, then submit-and-claim-next until a claim answers 204 (nothing left)."""
    conn, rng = Connection(port), random.Random(seed)
    assignment, failures = None, 0
    try:
        while failures < MAX_FAILURES_IN_A_ROW:
            if assignment is None:
                status, payload = await _send(conn, f"/api/rate/{dataset}/claim/", token, b"{}", stats)
                if status == 204:
                    return
                if status != 200:
                    stats.errors[f"claim {status}"] += 1
                    failures += 1
                    continue
                assignment = json.loads(payload)
                stats.claims += 1
                stats.resumed += assignment["resumed"]
            body = submission(rng, assignment["kind"])
            path = f"/api/rate/{dataset}/slots/{assignment['slot_id']}/submit/"
            status, payload = await _send(conn, path, token, body, stats)
            if status not in (200, 201):
                stats.errors[f"submit {status}"] += 1
                failures += 1
                assignment = None  # the next claim gives the held slot back, if it is still ours
                continue
            failures = 0
            stats.ratings += status == 201
            stats.replayed += status == 200
            assignment = json.loads(payload)["next"]
        stats.gave_up.append(username)
    finally:
        conn.close()


async def _report(stats: RatingStats, expected: int, started: float) -> None:
    """A line every PROGRESS_EVERY_S: ratings so far, the rate overall and in the last
    interval, and the load average (other work on the machine changes the rate)."""
    before, last = 0, started
    while True:
        await asyncio.sleep(PROGRESS_EVERY_S)
        now = time.perf_counter()
        recent = (stats.ratings - before) / (now - last)
        log(
            f"  rating: {stats.ratings:,}/{expected:,} ratings after {now - started:.0f} s "
            f"({stats.ratings / (now - started):.1f}/s; last {now - last:.0f} s: {recent:.1f}/s), "
            f"load average {os.getloadavg()[0]:.2f}, errors {dict(stats.errors) or 0}"
        )
        before, last = stats.ratings, now


async def _rate_all(port: int, dataset: str, raters: list[tuple[str, str]], expected: int, stats: RatingStats):
    started = time.perf_counter()
    reporter = asyncio.create_task(_report(stats, expected, started))
    try:
        await asyncio.gather(
            *(rate_until_empty(port, dataset, name, token, seed, stats) for seed, (name, token) in enumerate(raters))
        )
    finally:
        reporter.cancel()


def rate_everything(port: int, dataset: str, raters: list[tuple[str, str]], expected: int) -> RatingStats:
    """Every (username, token) rates concurrently until the dataset has nothing left."""
    stats = RatingStats()
    asyncio.run(_rate_all(port, dataset, raters, expected, stats))
    return stats
