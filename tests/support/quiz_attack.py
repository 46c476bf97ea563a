"""The quiz's answers learned with throwaway accounts: a script that takes a
kind's quiz through the HTTP API the way a rater's browser does and keeps every reference
level any answer shows it, for a second account to answer from."""

from __future__ import annotations

import itertools
import secrets

from django.test import Client

from annotation.core import cxc
from annotation.models import QualitySettings

# The middle of the scale: the best guess at a question nobody told the script about when
# the references sit at the scale's two ends (every guess is then 2.5 off on average).
BLIND_GUESS = 2.5


def invented_prolific_id() -> str:
    """A participant id made up on the spot, in Prolific's format (24 hex characters):
    the format alone never proves that the platform knows the person."""
    return secrets.token_hex(12)


def throwaway_participant(link, address: str) -> Client:
    """A browser signed in as a new participant of ``link`` with an invented id, coming
    from ``address``; asserts that the join made the account."""
    http = Client(REMOTE_ADDR=address)
    joined = http.get(f"/join/{link.token}/", {link.id_param: invented_prolific_id()})
    assert joined.status_code == 302, joined.content
    return http


def signed_in_rater(user) -> Client:
    http = Client()
    http.force_login(user)
    return http


def edge_references(n: int) -> list[float]:
    """``n`` references at the scale's two ends, alternating: a rater who knows a
    question's level is exact, one who does not is 2.5 off whatever they answer."""
    return [cxc.SCORE_MIN if index % 2 else cxc.SCORE_MAX for index in range(n)]


def strict_quiz(dataset, *, length: int, max_error: float) -> None:
    QualitySettings.objects.update_or_create(
        dataset=dataset, defaults={"quiz_length": length, "quiz_max_error": max_error}
    )


class QuizScript:
    """One account's attempts at a kind's quiz through the API. ``learned`` maps each
    question (its opaque id, the same for every rater) to the reference level an answer
    named; ``shown_while_open`` counts the levels named while the attempt was still open."""

    def __init__(self, http: Client, dataset: str, kind: str = "sis"):
        self.http, self.base = http, f"/api/rate/{dataset}/quiz/{kind}/"
        self.learned: dict[str, str] = {}
        self.asked: list[str] = []
        self.shown_while_open = 0
        self.keys = itertools.count()

    def attempt(self, score_for, *, start: bool = False) -> dict | None:
        """Answer every question of the open (or, with ``start``, the next) attempt with
        ``score_for(question)``; the finished state, or None when the quiz refused to
        begin (its answer is kept in ``refused``)."""
        loaded = self.http.post(self.base, {"start": start}, content_type="application/json")
        if loaded.status_code != 200:
            self.refused = loaded
            return None
        state = loaded.json()
        self._learn(state, asked=None)
        while state["result"] is None:
            question = state["gold_pair_id"]
            self.asked.append(question)
            body = {
                "gold_pair_id": question,
                "score": score_for(question),
                "time_on_item_ms": 4000,
                "time_to_first_move_ms": 600,
                "adjustments": 2,
                "idempotency_key": f"script-{next(self.keys)}",
            }
            answer = self.http.post(f"{self.base}answer/", body, content_type="application/json")
            assert answer.status_code == 201, answer.content
            self._learn(answer.json(), asked=question)
            state = answer.json()["state"]
        return state

    def from_learned(self, learned: dict[str, str]):
        """score_for answering a question at the level ``learned`` names, else blind."""
        return lambda question: float(cxc.LEVEL_NAMES.index(learned[question])) if question in learned else BLIND_GUESS

    def _learn(self, body: dict, *, asked: str | None) -> None:
        state = body.get("state", body)
        open_attempt = state.get("result") is None
        if asked is not None and body.get("reference_level"):
            self.learned[asked] = body["reference_level"]
            self.shown_while_open += open_attempt
        for entry in state.get("review") or []:
            self.learned[entry["question"]] = entry["reference_level"]
            self.shown_while_open += open_attempt
