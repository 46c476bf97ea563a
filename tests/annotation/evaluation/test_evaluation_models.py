"""`manage.py evaluate --model NAME:...`: several models in one run, the comparison table in
the terminal, JSON and CSV, protocols chosen, and bad model specs named."""

import csv
import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from tests.support.evaluation_data import EXPECTED, assert_retrieval_matches

pytestmark = pytest.mark.django_db


def run(**options) -> str:
    out = io.StringIO()
    call_command("evaluate", stdout=out, **options)
    return out.getvalue()


def model_spec(files, name: str, image_vectors=None, caption_vectors=None) -> str:
    return (
        f"{name}:image-vectors={image_vectors or files['image_vectors']},image-ids={files['image_ids']},"
        f"caption-vectors={caption_vectors or files['caption_vectors']},caption-ids={files['caption_ids']}"
    )


def test_two_models_one_comparison_in_json_csv_and_the_terminal(hand_dataset, hand_files, tmp_path):
    # The second model's caption vectors are the first's, reversed: a worse model.
    reversed_path = tmp_path / "reversed.npy"
    np.save(reversed_path, np.load(hand_files["caption_vectors"])[::-1].copy())
    out_json, out_csv = tmp_path / "compare.json", tmp_path / "compare.csv"
    text = run(
        dataset=hand_dataset.name,
        split="val",
        ratings=str(hand_files["ratings"]),
        model=[model_spec(hand_files, "good"), model_spec(hand_files, "reversed", caption_vectors=reversed_path)],
        samples=200,
        out=str(out_json),
        csv=str(out_csv),
    )
    report = json.loads(out_json.read_text())
    assert list(report["models"]) == ["good", "reversed"]
    assert_retrieval_matches(report["models"]["good"]["retrieval"], EXPECTED)
    assert report["models"]["good"]["retrieval"] != report["models"]["reversed"]["retrieval"]
    rows = {(r["section"], r["task"], r["positives"], r["metric"]): r["models"] for r in report["comparison"]}
    r1 = rows[("retrieval", "text_to_image", "original", "R@1")]
    assert r1["good"]["value"] == pytest.approx(EXPECTED["text_to_image"]["original"]["R@1"])
    low, high = r1["good"]["ci"]
    assert 0 <= low <= r1["good"]["value"] <= high <= 100
    assert ("retrieval", "image_to_text", "cxc", "mAP@R") in rows
    assert ("calibration", "SITS", "cxc", "pr_auc") in rows
    assert ("own_top_k", "image_to_text", "cxc+original", "P@10") not in rows  # 6 captions: k=10 cannot run
    lines = list(csv.DictReader(out_csv.read_text().splitlines()))
    assert {line["model"] for line in lines} == {"good", "reversed"}
    good_r1 = next(
        line
        for line in lines
        if (line["section"], line["task"], line["positives"], line["metric"], line["model"])
        == ("retrieval", "text_to_image", "original", "R@1", "good")
    )
    assert float(good_r1["value"]) == pytest.approx(r1["good"]["value"])
    assert float(good_r1["ci_low"]) == pytest.approx(low)
    assert "== model good" in text and "== model reversed" in text
    assert "Comparison (value [95% bootstrap interval over queries]):" in text
    lines_out = text.splitlines()
    header = lines_out[lines_out.index("Comparison (value [95% bootstrap interval over queries]):") + 1]
    assert header.split()[-2:] == ["good", "reversed"]


def test_chosen_protocols_only_and_a_small_k(hand_dataset, hand_files, tmp_path):
    out_json = tmp_path / "some.json"
    run(
        dataset=hand_dataset.name,
        split="val",
        ratings=str(hand_files["ratings"]),
        model=[model_spec(hand_files, "m")],
        protocols="coco5k,topk",
        top_k=2,
        samples=50,
        out=str(out_json),
    )
    report = json.loads(out_json.read_text())["models"]["m"]
    assert set(report["retrieval"]["image_to_text"]) == {"original"}
    assert report["correlation"] == {} and report["calibration"] == {} and report["coco_1k"] == {}
    top = report["own_top_k"]["image_to_text"]
    # Three images, two captions each, k=2: every retrieved caption is judged (original or a SITS row).
    assert top["k"] == 2 and top["retrieved"] == 6
    assert top["judged"] + top["unrated"] == 6
    assert top["judged_by"] == ["cxc", "original"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nocolon", "expected NAME:key=value"),
        ("m:image-space", "is not key=value"),
        ("m:colour=red", "unknown key 'colour'"),
        ("m:spaces=both,image-space=x", "spaces is joint or unimodal"),
        ("m:spaces=joint", "names no vectors"),
        ("m:image-space=nowhere", "has no embedding space 'nowhere'"),
    ],
)
def test_bad_model_specs_are_named(hand_dataset, hand_files, spec, message):
    with pytest.raises(CommandError, match=message):
        run(dataset=hand_dataset.name, split="val", ratings=str(hand_files["ratings"]), model=[spec])


def test_a_model_named_twice_and_unknown_protocols_are_refused(hand_dataset, hand_files):
    with pytest.raises(CommandError, match="given twice"):
        run(dataset=hand_dataset.name, split="val", model=[model_spec(hand_files, "a"), model_spec(hand_files, "a")])
    with pytest.raises(CommandError, match="unknown protocol"):
        run(dataset=hand_dataset.name, split="val", model=[model_spec(hand_files, "a")], protocols="coco5k,eccv")


def test_the_own_top_k_alone_equals_the_one_beside_the_retrieval_pass(hand_dataset, hand_files, tmp_path):
    reports = {}
    for protocols in ("topk", "coco5k,topk"):
        out = tmp_path / f"{protocols}.json"
        run(
            dataset=hand_dataset.name,
            split="val",
            ratings=str(hand_files["ratings"]),
            model=[model_spec(hand_files, "m")],
            protocols=protocols,
            top_k=2,
            samples=50,
            out=str(out),
        )
        reports[protocols] = json.loads(out.read_text())["models"]["m"]["own_top_k"]
    assert reports["topk"] == reports["coco5k,topk"]
    assert reports["topk"]["image_to_text"]["judged"] > 0
