"""Every figure an evaluation reports has the researcher page's words for it: a label (no
raw key), a unit and a meaning (frontend/static/frontend/research/figures.js,
asked under Node for the figures of a whole evaluation of the hand-built split, every
protocol and both ratings sources). No database, no browser."""

import json
import shutil
import subprocess

from annotation.evaluation.compare import comparison_rows
from annotation.evaluation.report import evaluate
from tests.conftest import REPO_DIR, skip_or_fail
from tests.support.evaluation_data import hand_items, hand_ratings, hand_spaces

FIGURES = REPO_DIR / "frontend" / "static" / "frontend" / "research" / "figures.js"
# Reads the rows on stdin; prints, per row, what the page would show.
SCRIPT = """
import { metricInfo, rowSubject, skippedLabel } from %s;
let text = "";
process.stdin.on("data", (chunk) => (text += chunk));
process.stdin.on("end", () => {
  const { rows, items, skipped } = JSON.parse(text);
  const positiveAt = { STS: 3, SIS: 2.5, SITS: 3 };
  const shown = rows.map((row) => ({
    ...metricInfo(row.section, row.metric),
    subject: rowSubject(row, items, positiveAt),
  }));
  console.log(JSON.stringify({ shown, skipped: skipped.map((key) => skippedLabel(key, {})) }));
});
"""


def page_words(rows: list[dict], items: dict, skipped: list[str]) -> dict:
    node = shutil.which("node")
    if node is None:
        skip_or_fail("node is not installed (apt-get install nodejs)")
    result = subprocess.run(
        [node, "--input-type=module", "-e", SCRIPT % json.dumps(FIGURES.as_uri())],
        input=json.dumps({"rows": rows, "items": items, "skipped": skipped}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def test_every_figure_and_every_task_left_out_has_the_pages_words():
    images, captions = hand_spaces()
    report = evaluate(
        items=hand_items(),
        ratings=hand_ratings(),
        audited=hand_ratings("audited"),
        image_space=images,
        caption_space=captions,
        joint=True,
        top_k=2,
        samples=50,
    )
    rows = comparison_rows({"m": report})
    assert {row["section"] for row in rows} == {"retrieval", "correlation", "calibration", "own_top_k"}
    words = page_words(rows, report["items"], list(report["skipped"]))
    for row, shown in zip(rows, words["shown"], strict=True):
        assert "_" not in shown["label"] and shown["unit"] and shown["explain"], (row, shown)
        assert "_" not in shown["subject"] and shown["subject"] != row["task"], (row, shown)
    assert "original pairs, over the split's 3 images" in words["shown"][0]["subject"]
    for key, label in zip(report["skipped"], words["skipped"], strict=True):
        assert "_" not in label and label != key, (key, label)


def test_every_explained_figure_has_the_pages_words():
    """The explained failures' and the adversarial queries' figures of the hand-built split."""
    import numpy as np

    from annotation.evaluation.explain.adversarial import adversarial_run, substitutes
    from annotation.evaluation.explain.failures import explained_model, image_objects
    from annotation.evaluation.explain.ranking import build_corpora
    from sampling.encoders import hashing_encoder
    from tests.support.evaluation_data import CAPTION_OF, HAND_OBJECTS, HAND_SIZE, HAND_TEXTS, IMAGE_KEYS

    encode = hashing_encoder(32)
    vectors = encode(HAND_TEXTS)
    captions = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    caption_image = np.array(CAPTION_OF)
    images = image_objects(
        IMAGE_KEYS, dict.fromkeys(IMAGE_KEYS, HAND_SIZE), dict(zip(IMAGE_KEYS, HAND_OBJECTS, strict=True))
    )
    summary, _ = explained_model(captions, caption_image, HAND_TEXTS, images)
    corpora = build_corpora(captions, caption_image, len(IMAGE_KEYS))
    kinds = adversarial_run(captions, caption_image, corpora, HAND_TEXTS, encode, table=substitutes(HAND_TEXTS))
    summary["adversarial"] = {"settings": {}, "kinds": kinds}
    rows = comparison_rows({"m": {"explain": summary}})
    assert {row["section"] for row in rows} == {"explain", "adversarial"}
    words = page_words(rows, {"images": 3, "captions": 6}, [])
    for row, shown in zip(rows, words["shown"], strict=True):
        assert "_" not in shown["label"] and shown["unit"] and shown["explain"], (row, shown)
        assert "_" not in shown["subject"] and shown["subject"] != row["task"], (row, shown)
