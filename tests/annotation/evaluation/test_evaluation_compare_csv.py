"""The comparison CSV opens in spreadsheets: a model name typed like a formula is escaped,
the figures (negative ones too) stay numbers."""

import csv
import io

from annotation.evaluation.compare import CSV_COLUMNS, comparison_csv


def test_a_formula_like_model_name_is_escaped_and_numbers_stay_numbers():
    rows = [
        {
            "section": "sts",
            "task": "STS",
            "positives": 3,
            "metric": "spearman",
            "models": {
                '=HYPERLINK("http://x")': {"value": -12.5, "ci": [-20.0, -5.0]},
                "plain": {"value": 1.0, "ci": None},
            },
        }
    ]
    lines = list(csv.reader(io.StringIO(comparison_csv(rows))))
    assert lines[0] == list(CSV_COLUMNS)
    assert lines[1][4] == '\'=HYPERLINK("http://x")'
    assert lines[1][5:] == ["-12.5", "-20.0", "-5.0"]
    assert lines[2][4:] == ["plain", "1.0", "", ""]
