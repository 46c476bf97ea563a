"""`manage.py evaluate`: the split's items and original pairs from the database, ratings
and vectors from files; on the hand-built split and on the public CxC validation files."""

import csv
import io
import json
import math
import re

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from annotation.catalog.services import dataset_import_karpathy, embedding_space_import
from annotation.models import Caption
from tests.support.evaluation_data import (
    CAPTION_KEYS,
    EXPECTED,
    assert_retrieval_matches,
    import_hand_spaces,
)

pytestmark = pytest.mark.django_db


def run_evaluate(**options) -> str:
    out = io.StringIO()
    call_command("evaluate", stdout=out, **options)
    return out.getvalue()


def file_options(files, *modalities):
    options = {"ratings": str(files["ratings"])}
    for modality in modalities:
        options[f"{modality}_vectors"] = str(files[f"{modality}_vectors"])
        options[f"{modality}_ids"] = str(files[f"{modality}_ids"])
    return options


def test_reports_every_known_figure_as_table_and_json(hand_dataset, hand_files, tmp_path):
    out_path = tmp_path / "reports" / "report.json"
    text = run_evaluate(
        dataset=hand_dataset.name, split="val", out=str(out_path), **file_options(hand_files, "image", "caption")
    )
    report = json.loads(out_path.read_text())
    assert_retrieval_matches(report["retrieval"], EXPECTED)
    assert report["dataset"] == hand_dataset.name
    assert report["ratings_split"] == "val"
    assert report["spaces"] == "joint"
    assert report["vectors"] == {
        "image": str(hand_files["image_vectors"]),
        "caption": str(hand_files["caption_vectors"]),
    }
    assert "SITS" in report["correlation"]
    assert f"CxC evaluation of split 'val' of dataset '{hand_dataset.name}': 3 images, 6 captions" in text
    assert re.search(r"original pairs\s+100\.0\s+100\.0\s+100\.0\s+1\.0\s+50\.0\s+100\.0\s+100\.0\s+1\.5", text)
    assert f"report written to {out_path}" in text


def test_stored_embedding_spaces_give_the_same_figures(hand_dataset, hand_files):
    import_hand_spaces(hand_dataset, hand_files)
    out_path = hand_files["ratings"].parent / "stored.json"
    run_evaluate(
        dataset=hand_dataset.name,
        split="val",
        ratings=str(hand_files["ratings"]),
        image_space="image-model",
        caption_space="caption-model",
        out=str(out_path),
    )
    assert_retrieval_matches(json.loads(out_path.read_text())["retrieval"], EXPECTED)


def test_unimodal_spaces_are_evaluated_as_such(hand_dataset, hand_files, tmp_path):
    out_path = tmp_path / "unimodal.json"
    run_evaluate(
        dataset=hand_dataset.name,
        split="val",
        spaces="unimodal",
        out=str(out_path),
        **file_options(hand_files, "image", "caption"),
    )
    report = json.loads(out_path.read_text())
    assert report["spaces"] == "unimodal"
    assert set(report["retrieval"]) == {"text_to_text", "image_to_image"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"dataset": "nope"}, "no dataset named 'nope'"),
        ({"split": "test"}, "has no split 'test'; it has: val"),
        ({"ratings_split": "test"}, "split 'test' has no ratings files in"),
        ({"image_ids": None}, "--image-vectors and --image-ids go together"),
        ({"image_space": "effnet"}, "give --image-space or --image-vectors/--image-ids, not both"),
        ({"samples": 0}, "bootstrap samples must be at least 1, got 0"),
    ],
)
def test_bad_options_are_named_and_nothing_is_written(hand_dataset, hand_files, tmp_path, change, message):
    out_path = tmp_path / "report.json"
    options = {"dataset": hand_dataset.name, "split": "val", "out": str(out_path)}
    options.update(file_options(hand_files, "image", "caption"))
    options.update(change)
    options = {key: value for key, value in options.items() if value is not None}
    with pytest.raises(CommandError, match=re.escape(message)):
        run_evaluate(**options)
    assert not out_path.exists()


def test_joint_needs_both_modalities(hand_dataset, hand_files):
    with pytest.raises(CommandError, match="--spaces joint needs both image and caption vectors"):
        run_evaluate(dataset=hand_dataset.name, split="val", spaces="joint", **file_options(hand_files, "caption"))


def test_a_stored_space_of_the_other_modality_is_refused(hand_dataset, hand_files):
    embedding_space_import(
        dataset_name=hand_dataset.name,
        space_name="text-model",
        modality="caption",
        vectors_path=hand_files["caption_vectors"],
        ids_path=hand_files["caption_ids"],
    )
    with pytest.raises(CommandError, match="embedding space 'text-model' holds caption vectors, not image vectors"):
        run_evaluate(
            dataset=hand_dataset.name, split="val", ratings=str(hand_files["ratings"]), image_space="text-model"
        )


def test_vectors_with_nan_are_named(hand_dataset, hand_files, tmp_path):
    vectors = np.load(hand_files["caption_vectors"])
    vectors[4, 0] = np.nan
    np.save(hand_files["caption_vectors"], vectors)
    with pytest.raises(CommandError, match=re.escape(f"row 4 (id {CAPTION_KEYS[4]!r}) has a NaN or infinite value")):
        run_evaluate(dataset=hand_dataset.name, split="val", **file_options(hand_files, "image", "caption"))


def test_rated_ids_that_the_vectors_lack_are_named(hand_dataset, hand_files):
    sts = hand_files["ratings"] / "sts_val.csv"
    with sts.open("a", newline="") as handle:
        csv.writer(handle).writerow(["COCO_val2014:sentid:424242", CAPTION_KEYS[0], "2.00", "c2c_isim"])
    with pytest.raises(CommandError) as caught:
        run_evaluate(dataset=hand_dataset.name, split="val", **file_options(hand_files, "image", "caption"))
    assert str(caught.value) == (
        f"{sts}: the caption vectors ({hand_files['caption_vectors']}) lack 1 caption id(s) of the ratings: "
        "'COCO_val2014:sentid:424242'"
    )


# --- the public CxC validation files, end to end --------------------------------------------


def bag_of_words(texts: list[str]) -> np.ndarray:
    """Deterministic word-count vectors over the captions' own vocabulary: float32 (n, vocab)."""
    tokens = [re.findall(r"[a-z]+", text.lower()) for text in texts]
    vocabulary = {word: i for i, word in enumerate(sorted({w for words in tokens for w in words}))}
    vectors = np.zeros((len(texts), len(vocabulary)), dtype=np.float32)
    for row, words in enumerate(tokens):
        for word in words:
            vectors[row, vocabulary[word]] += 1
    return vectors


def test_sts_correlation_on_the_public_validation_files(coco_mini, shared_dir, tmp_path):
    """coco_mini's captions, keyed as CxC keys them, against the full public sts_val.csv:
    the rows whose two captions are coco_mini captions are evaluated, the rest left out."""
    dataset_import_karpathy(
        path=coco_mini / "dataset.json", name="coco-mini", images_root=str(coco_mini), key_prefix="COCO_val2014"
    )
    captions = list(Caption.objects.filter(dataset__name="coco-mini").order_by("key").values_list("key", "text"))
    keys = [key for key, _ in captions]
    vectors = bag_of_words([text for _, text in captions])
    np.save(tmp_path / "bow.npy", vectors)
    (tmp_path / "bow.txt").write_text("".join(f"{key}\n" for key in keys))

    out_path = tmp_path / "report.json"
    text = run_evaluate(
        ratings=str(shared_dir / "cxc"),
        dataset="coco-mini",
        split="mini",
        ratings_split="val",
        restrict_to_split=True,
        caption_vectors=str(tmp_path / "bow.npy"),
        caption_ids=str(tmp_path / "bow.txt"),
        seed=11,
        out=str(out_path),
    )
    report = json.loads(out_path.read_text())

    with (shared_dir / "cxc" / "sts_val.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    known = set(keys)
    covered = [r for r in rows if r["caption1"] in known and r["caption2"] in known]
    assert len(covered) >= 20
    assert report["ratings"]["STS"] == {
        "file": str(shared_dir / "cxc" / "sts_val.csv"),
        "rows": len(rows),
        "rows_used": len(covered),
        "rows_left_out": len(rows) - len(covered),
    }

    row_of = {key: i for i, key in enumerate(keys)}
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    human = np.array([float(r["agg_score"]) for r in covered])
    model = np.array([unit[row_of[r["caption1"]]] @ unit[row_of[r["caption2"]]] for r in covered])
    full = 100 * stats.spearmanr(human, model).statistic
    sts = report["correlation"]["STS"]
    assert sts["samples"] == 1000 and sts["seed"] == 11 and sts["undefined_samples"] == 0
    assert sts["queries"] == len({r["caption1"] for r in covered})
    assert full > 10  # word overlap goes with human similarity on real captions
    assert sts["mean"] == pytest.approx(full, abs=8)
    assert 0 < sts["std"] < 30
    low, high = sts["ci"]  # the central 95% of the half-samples: an interval of rho over all rows
    assert low < sts["mean"] < high and low <= full <= high

    positives = [r for r in covered if float(r["agg_score"]) >= 3]
    t2t = report["retrieval"]["text_to_text"]["cxc"]
    assert t2t["queries"] == len({r["caption1"] for r in positives} | {r["caption2"] for r in positives})
    assert t2t["candidates"] == len(keys) - 1
    assert set(report["skipped"]) == {
        "image_to_text",
        "text_to_image",
        "coco_5k",
        "coco_1k",
        "image_to_image",
        "SIS",
        "SITS",
    }
    assert not math.isnan(sts["mean"])
    assert "STS" in text and f"{len(covered)} used" in text
