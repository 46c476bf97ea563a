"""The peer benchmark's data and its check of what each store kept (``bench_peer.py``):
generated sentence pairs, and a store's answers against the rule and the client's
acknowledgements."""

from __future__ import annotations

import hashlib
import random

import psycopg2
from _peer_client import Acknowledged
from _queue_data import server_dsn

CAP = 5  # answers per item, both apps


# --- data ----------------------------------------------------------------------------

SUBJECTS = ["a man", "a woman", "two children", "a dog", "a cat", "a cyclist", "an old man", "a girl", "a chef"]
VERBS = ["walks along", "sits on", "runs across", "looks at", "stands near", "rides past", "sleeps beside", "paints"]
PLACES = ["the beach", "a bench", "a busy street", "the kitchen table", "a snowy field", "a red bus", "the river"]


def sentence_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` pairs of short generated sentences (half of them sharing their subject)."""
    rng = random.Random(seed)

    def sentence(subject: str) -> str:
        return f"{subject} {rng.choice(VERBS)} {rng.choice(PLACES)}.".capitalize()

    pairs = []
    for number in range(n):
        first = rng.choice(SUBJECTS)
        second = first if number % 2 else rng.choice(SUBJECTS)
        pairs.append((sentence(first), sentence(second)))
    return pairs


# --- stores --------------------------------------------------------------------------


def check_store(stored: dict, acked: Acknowledged) -> dict:
    """A store against the rule (at most CAP answers an item, one per rater) and against
    what the client was told: lost = acknowledged but not stored, per rater."""
    per_item = stored["per_item"].values()
    keys = set(stored["by_rater"]) | set(acked.by_rater)
    return {
        "answers": sum(n for n, _ in per_item),
        "acknowledged": sum(acked.by_rater.values()),
        "items_answered": len(per_item),
        "items_complete": sum(1 for n, _ in per_item if n >= CAP),
        "over_assigned": sum(1 for n, distinct in per_item if n > CAP or n > distinct),
        "max_answers_per_item": max((n for n, _ in per_item), default=0),
        "duplicated_answers": sum(n - distinct for n, distinct in per_item),
        "lost_answers": sum(max(0, acked.by_rater.get(k, 0) - stored["by_rater"].get(k, 0)) for k in keys),
        "unacknowledged_answers": sum(max(0, stored["by_rater"].get(k, 0) - acked.by_rater.get(k, 0)) for k in keys),
    }


def stored_ours(database: str, tokens: list[str]) -> dict:
    """Our store: ratings per rater (matched to tokens by knox's SHA-512 digest) and per pair."""
    by_digest = {hashlib.sha512(token.encode()).hexdigest(): token for token in tokens}
    conn = psycopg2.connect(server_dsn(database))
    with conn, conn.cursor() as cur:
        cur.execute("SELECT user_id, digest FROM knox_authtoken")
        token_of = {user: by_digest.get(digest) for user, digest in cur.fetchall()}
        cur.execute("SELECT rater_id, count(*) FROM annotation_rating GROUP BY 1")
        by_rater = {token_of.get(user) or f"user{user}": n for user, n in cur.fetchall()}
        cur.execute("SELECT pair_id, count(*), count(DISTINCT rater_id) FROM annotation_rating GROUP BY 1")
        per_item = {pair: [n, distinct] for pair, n, distinct in cur.fetchall()}
    conn.close()
    return {"by_rater": by_rater, "per_item": per_item}
