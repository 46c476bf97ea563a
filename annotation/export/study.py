"""The participants' answers to their campaign links' questions:
``study_answers.csv`` beside the ratings, one row per answer, the participant named by the
same pseudonym as in the rating files (``rater_id``). Written only when the dataset has
answers (no empty files, as for the tasks). Answers, prompts and link names are free text:
written through the one CSV writer, a formula-like cell escaped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from annotation.core import spreadsheet_csv
from annotation.models import Dataset, ParticipantAnswer

STUDY_ANSWERS = "study_answers.csv"
STUDY_ANSWER_COLUMNS = ("rater_id", "link", "phase", "position", "question", "answer_type", "answer", "answered_at")


def write_study_answers(folder: Path, dataset: Dataset, rater_names: Callable[[set[int]], dict]) -> dict | None:
    """Write the answers of the participants of the dataset's links; returns the file's
    entry for the manifest (None when there are none). ``rater_names``: the export's
    pseudonym mapping, grown to cover a set of rater ids."""
    answers = (
        ParticipantAnswer.objects.filter(participant__link__dataset=dataset)
        .select_related("question__link", "participant")
        .order_by("participant__link_id", "participant_id", "-question__phase", "question__position", "question_id")
    )
    if not answers.exists():
        return None
    names = rater_names(set(answers.values_list("participant__user_id", flat=True)))
    rows = 0
    with (folder / STUDY_ANSWERS).open("w", newline="", encoding="utf-8") as handle:
        writer = spreadsheet_csv.writer(handle, lineterminator="\n")
        writer.writerow(STUDY_ANSWER_COLUMNS)
        for answer in answers.iterator(chunk_size=2000):
            question = answer.question
            writer.writerow(
                [
                    names[answer.participant.user_id],
                    question.link.name,
                    question.phase,
                    question.position,
                    question.prompt,
                    question.answer_type,
                    answer.answer,
                    answer.answered_at.isoformat(),
                ]
            )
            rows += 1
    return {"name": STUDY_ANSWERS, "rows": rows, "split": None, "task": None}
