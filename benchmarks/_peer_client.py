"""The load generator of the peer benchmark (``bench_peer.py``): one asyncio client that
drives our app and a peer annotation tool alike, over raw keep-alive HTTP/1.1 connections
in the style of ``_load.py``.

An app is driven through an adapter with three coroutines: ``login`` (before a phase's
timer starts: a session cookie, or nothing for token users), ``claim`` (get the next item
to show: one or more requests, timed together as the claim) and ``submit`` (store a score
for it: True when the app answered that it stored it). A cycle is one claim plus one
submit. Every rater counts the submits the app acknowledged, so the store can be checked
afterwards for answers that were acknowledged but not stored.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from dataclasses import dataclass, field

from _load import FLOWS, PAGE_CLAIM, PAGE_SUBMIT_TEMPLATE, SUBMIT_TEMPLATE, Stats, percentile


class HttpConnection:
    """One keep-alive HTTP/1.1 connection: any method, extra headers, the cookies a server
    set (kept per connection: one connection per simulated rater), Content-Length or
    chunked bodies."""

    def __init__(self, port: int):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.cookies: dict[str, str] = {}

    async def request(
        self, method: str, path: str, *, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        if self.cookies:
            lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        status_line = await self.reader.readline()
        if not status_line:
            self.close()
            raise ConnectionError("server closed the connection")
        status = int(status_line.split(b" ", 2)[1])
        answer = await self._headers()
        payload = await self._body(answer)
        if answer.get("connection", "").lower() == "close":
            self.close()
        return status, answer, payload

    async def _headers(self) -> dict[str, str]:
        answer: dict[str, str] = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                return answer
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "set-cookie":
                cookie = value.split(";", 1)[0]
                key, _, content = cookie.partition("=")
                self.cookies[key.strip()] = content.strip()
            answer[name] = value

    async def _body(self, answer: dict[str, str]) -> bytes:
        if answer.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()  # the empty trailer line
                    return b"".join(chunks)
                chunks.append(await self.reader.readexactly(size))
                await self.reader.readline()
        length = int(answer.get("content-length", "0"))
        return await self.reader.readexactly(length) if length else b""

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class Rater:
    """One simulated rater: its key for the app (token or user name), its connection and
    what it knows between requests."""

    key: str
    conn: HttpConnection
    state: dict = field(default_factory=dict)


@dataclass
class Acknowledged:
    """Submits the apps acknowledged, per rater key (checked against the store)."""

    by_rater: dict[str, int] = field(default_factory=dict)

    def add(self, key: str) -> None:
        self.by_rater[key] = self.by_rater.get(key, 0) + 1


class OursApp:
    """Our rating API. ``flow="page"`` sends what the rating page sends: a claim when
    nothing is held, then each submit also claims the next pair (``claim_next_kind``) and
    asks for the rater's progress, so a claim that the submit before already answered
    sends nothing. ``flow="split"`` sends ``_load.py``'s split cycle: POST claim (200
    assignment, 204 nothing left), POST submit (201 stored)."""

    name = "ours"

    def __init__(self, port: int, dataset: str = "bench", flow: str = "page"):
        if flow not in FLOWS:
            raise ValueError(f"flow {flow!r}: use one of {', '.join(FLOWS)}")
        self.port, self.flow = port, flow
        self.claim_path = f"/api/rate/{dataset}/claim/"
        self.submit_path = f"/api/rate/{dataset}/slots/%s/submit/"

    def _headers(self, rater: Rater) -> dict[str, str]:
        return {"Authorization": f"Token {rater.key}", "Content-Type": "application/json"}

    async def login(self, rater: Rater) -> None:
        """Token users: nothing to do."""

    async def claim(self, rater: Rater) -> str | None:
        if self.flow == "page" and rater.state.get("next"):
            return rater.state.pop("next")
        body = PAGE_CLAIM if self.flow == "page" else b"{}"
        status, _, payload = await rater.conn.request("POST", self.claim_path, body=body, headers=self._headers(rater))
        if status == 204:
            return None
        if status != 200:
            raise ClaimError(f"claim {status}")
        return json.loads(payload)["slot_id"]

    async def submit(self, rater: Rater, item: str, score: float) -> bool:
        template = PAGE_SUBMIT_TEMPLATE if self.flow == "page" else SUBMIT_TEMPLATE
        body = (template % (score, uuid.uuid4().hex)).encode()
        status, _, payload = await rater.conn.request(
            "POST", self.submit_path % item, body=body, headers=self._headers(rater)
        )
        if status == 201 and self.flow == "page":
            following = json.loads(payload)["next"]
            rater.state["next"] = following["slot_id"] if following else None
        return status == 201


class ClaimError(Exception):
    """A claim the app refused with an unexpected status (counted, the rater goes on)."""


async def cycle(app, rater: Rater, stats: Stats, acked: Acknowledged, rng: random.Random) -> bool | None:
    """Claim then submit; True for a completed cycle, None when the app had nothing left."""
    started = time.perf_counter()
    try:
        item = await app.claim(rater)
    except ClaimError as error:
        stats.error(str(error))
        return False
    claimed = time.perf_counter()
    if item is None:
        stats.empty += 1
        return None
    stats.claim_ms.append((claimed - started) * 1000)
    if not await app.submit(rater, item, rng.uniform(0, 5)):
        stats.error("submit refused")
        return False
    acked.add(rater.key)
    stats.submit_ms.append((time.perf_counter() - claimed) * 1000)
    stats.cycles += 1
    return True


async def login_all(app, raters: list[Rater]) -> None:
    """Log every rater in (a session for the peers that need one), a few at a time."""
    for start in range(0, len(raters), 8):
        await asyncio.gather(*(app.login(r) for r in raters[start : start + 8]))


async def closed_loop(app, raters: list[Rater], seconds: float, stats: Stats, acked: Acknowledged) -> float:
    """Each rater claims and submits back to back until ``seconds`` pass; returns the
    seconds it ran (the last cycles end after the deadline)."""
    deadline = time.perf_counter() + seconds

    async def run(rater: Rater, seed: int) -> None:
        rng = random.Random(seed)
        while time.perf_counter() < deadline:
            try:
                if await cycle(app, rater, stats, acked, rng) is None:
                    await asyncio.sleep(0.05)  # nothing left for this rater now
            except (ConnectionError, asyncio.IncompleteReadError, OSError) as error:
                stats.error(type(error).__name__)
                rater.conn.close()

    started = time.perf_counter()
    await asyncio.gather(*(run(r, i) for i, r in enumerate(raters)))
    return time.perf_counter() - started


async def until_done(app, raters: list[Rater], limit_s: float, stats: Stats, acked: Acknowledged) -> float:
    """Saturation: every rater claims and submits until the app has nothing left for it
    (or ``limit_s`` passes); returns the seconds until the last rater stopped."""
    deadline = time.perf_counter() + limit_s

    async def run(rater: Rater, seed: int) -> None:
        rng = random.Random(seed)
        while time.perf_counter() < deadline:
            try:
                if await cycle(app, rater, stats, acked, rng) is None:
                    return
            except (ConnectionError, asyncio.IncompleteReadError, OSError) as error:
                stats.error(type(error).__name__)
                rater.conn.close()

    started = time.perf_counter()
    await asyncio.gather(*(run(r, 1000 + i) for i, r in enumerate(raters)))
    return time.perf_counter() - started


def close_all(raters: list[Rater]) -> None:
    for rater in raters:
        rater.conn.close()


def summary(stats: Stats, seconds: float) -> dict:
    """A phase's figures from the client's side."""
    return {
        "cycles": stats.cycles,
        "seconds": round(seconds, 1),
        "cycles_per_s": round(stats.cycles / seconds, 1) if seconds > 0 else None,
        "claim_p50_ms": _rounded(percentile(stats.claim_ms, 50)),
        "claim_p95_ms": _rounded(percentile(stats.claim_ms, 95)),
        "submit_p50_ms": _rounded(percentile(stats.submit_ms, 50)),
        "errors": dict(stats.errors),
        "empty": stats.empty,
    }


def _rounded(value: float) -> float | None:
    return None if value != value else round(value, 1)  # NaN (no samples) is no JSON
