"""Opaque ids: a keyed permutation of the ids 0 .. 2**63 - 1, one per kind of id.

A rater must not be able to order what they are served: database ids grow with time, so
a gold lease (leased from a fresh sequence value) would stand above every slot queued
before it, and a gold pair above every sampled pair. Raters therefore see each id through
a pseudo-random permutation: a balanced Feistel network over 64 bits whose round function
is HMAC-SHA256 under a secret key and a tweak per kind of id (slot, pair, rating, flag),
walked again while the result lies beyond 63 bits (cycle walking keeps it a permutation
of the 63-bit range, so every bigint id has exactly one opaque id and back). Without the
key, opaque ids are unrelated to each other and to the database's order; the same id of
two kinds maps to unrelated values.

Pure Python, no Django: ``annotation.apis.fields.rater_ids`` builds the one instance from
the settings' SECRET_KEY.
"""

from __future__ import annotations

import hashlib

ID_BITS = 63
ID_LIMIT = 1 << ID_BITS  # ids are 0 .. ID_LIMIT - 1, PostgreSQL's non-negative bigint
_HALF_BITS = 32
_HALF_MASK = (1 << _HALF_BITS) - 1
# Four rounds of a pseudo-random function make a strong pseudo-random permutation
# (Luby-Rackoff); six leave a margin at a cost of microseconds per id.
_ROUNDS = 6
_SHA256_BLOCK = 64
# Ids computed lately, both ways, per process: a rated item's ids come back (the slot
# served in one answer is the next submit's URL and that answer's slot_id; its pair is
# in both answers), so a page cycle computes 3 of its 7 ids instead of all (each is
# about 24 HMACs with the cycle walking). Bounded: emptied when full, a few MB at most.
MEMO_LIMIT = 16_384


class OpaqueIds:
    """``encode(kind, id)`` and its inverse ``decode(kind, opaque)`` for ids in
    [0, ID_LIMIT). ``key``: secret bytes; ``kinds``: the names of the id kinds."""

    def __init__(self, key: bytes, kinds: tuple[str, ...]):
        if len(key) < 16:
            raise ValueError("the key of opaque ids needs at least 16 bytes")
        self._rounds = {kind: [_round_key(key, f"{kind}\0{i}".encode()) for i in range(_ROUNDS)] for kind in kinds}
        # (kind, id) -> opaque id and (kind, opaque id) -> id, filled together.
        self._encoded: dict[tuple[str, int], int] = {}
        self._decoded: dict[tuple[str, int], int] = {}

    def encode(self, kind: str, value: int) -> int:
        known = self._encoded.get((kind, value))
        if known is not None and type(value) is int:
            return known
        rounds = self._checked(kind, value)
        opaque = _permute(rounds, value)
        while opaque >= ID_LIMIT:
            opaque = _permute(rounds, opaque)
        self._remember(kind, value, opaque)
        return opaque

    def decode(self, kind: str, value: int) -> int:
        known = self._decoded.get((kind, value))
        if known is not None and type(value) is int:
            return known
        rounds = self._checked(kind, value)
        plain = _unpermute(rounds, value)
        while plain >= ID_LIMIT:
            plain = _unpermute(rounds, plain)
        self._remember(kind, plain, value)
        return plain

    def _remember(self, kind: str, value: int, opaque: int) -> None:
        # Emptied rather than evicted one by one: no bookkeeping per lookup. Threads of a
        # process may race here; either order leaves only correct pairs.
        if len(self._encoded) >= MEMO_LIMIT:
            self._encoded.clear()
            self._decoded.clear()
        value, opaque = int(value), int(opaque)  # plain ints (an int subclass passes _checked)
        self._encoded[(kind, value)] = opaque
        self._decoded[(kind, opaque)] = value

    def _checked(self, kind: str, value: int) -> list:
        if kind not in self._rounds:
            raise KeyError(f"no opaque ids of kind {kind!r}; kinds: {', '.join(self._rounds)}")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < ID_LIMIT:
            raise ValueError(f"an id is a whole number from 0 to {ID_LIMIT - 1}, got {value!r}")
        return self._rounds[kind]


def _round_key(key: bytes, tweak: bytes) -> tuple:
    """HMAC-SHA256 under ``key`` (RFC 2104) with ``tweak`` as the start of every message,
    as the two SHA-256 states a round continues: the inner one past its key block and the
    tweak, the outer one past its key block. Copying these hashlib states is a third of
    the cost of copying an ``hmac`` object, and every rated item encodes several ids."""
    if len(key) > _SHA256_BLOCK:
        key = hashlib.sha256(key).digest()
    key = key.ljust(_SHA256_BLOCK, b"\0")
    inner = hashlib.sha256(bytes(byte ^ 0x36 for byte in key) + tweak)
    outer = hashlib.sha256(bytes(byte ^ 0x5C for byte in key))
    return inner, outer


def _round_value(round_key: tuple, half: int) -> int:
    """The first 32 bits of HMAC-SHA256(key, tweak + half as 4 bytes)."""
    inner, outer = round_key[0].copy(), round_key[1].copy()
    inner.update(half.to_bytes(4, "big"))
    outer.update(inner.digest())
    return int.from_bytes(outer.digest()[:4], "big")


def _permute(rounds: list, value: int) -> int:
    left, right = value >> _HALF_BITS, value & _HALF_MASK
    for round_key in rounds:
        left, right = right, left ^ _round_value(round_key, right)
    return (left << _HALF_BITS) | right


def _unpermute(rounds: list, value: int) -> int:
    left, right = value >> _HALF_BITS, value & _HALF_MASK
    for round_key in reversed(rounds):
        left, right = right ^ _round_value(round_key, left), left
    return (left << _HALF_BITS) | right
