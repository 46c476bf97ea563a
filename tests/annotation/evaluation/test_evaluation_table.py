"""The report as text tables (annotation/evaluation/table.py): pure numpy, no database."""

from annotation.evaluation.report import evaluate
from annotation.evaluation.table import format_report
from tests.support.evaluation_data import hand_items, hand_ratings, hand_spaces


def test_the_table_has_the_papers_shape():
    images, captions = hand_spaces()
    report = evaluate(
        items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True
    )
    text = format_report(report)
    lines = text.splitlines()
    assert any("Image -> Text" in line and "Text -> Image" in line for line in lines)
    assert any("Text -> Text (STS >= 3)" in line and "Image -> Image (SIS >= 2.5)" in line for line in lines)
    original = next(line for line in lines if line.startswith("original pairs"))
    assert original.split()[2:] == ["100.0", "100.0", "100.0", "1.0", "50.0", "100.0", "100.0", "1.5"]
    cxc = next(line for line in lines if line.startswith("CxC (+ SITS >= 3)"))
    assert cxc.split()[-4:] == ["83.3", "100.0", "100.0", "1.0"]
    assert "Not evaluated:" in text


def test_the_table_shows_correlations_as_mean_and_std():
    report = {
        "split": "val",
        "items": {"images": 1, "captions": 5},
        "spaces": "unimodal",
        "ratings": {},
        "retrieval": {},
        "correlation": {"STS": {"mean": 71.234, "std": 0.456}},
        "skipped": {},
        "settings": {"samples": 1000, "seed": 0, "bootstrap_queries": "both"},
    }
    text = format_report(report)
    assert "Spearman x 100 with human scores (mean ± std over 1000 samples, seed 0; queries: both items" in text
    assert text.splitlines()[-1].split() == ["71.2", "±", "0.5", "-", "-"]
