"""Bad input is refused with a message naming it (annotation/evaluation/inputs.py, rows.py,
report.py); the ratings files and vectors are read as given. Pure numpy, no database."""

import numpy as np
import pytest

from annotation.evaluation.inputs import (
    EvaluationError,
    RatedPairs,
    Space,
    load_space,
    read_cxc_ratings,
    read_ratings_folder,
)
from annotation.evaluation.report import evaluate
from tests.support.evaluation_data import (
    CAPTION_KEYS,
    CAPTION_VECTORS,
    EXPECTED,
    IMAGE_KEYS,
    IMAGE_VECTORS,
    SITS_ROWS,
    assert_retrieval_matches,
    hand_items,
    hand_ratings,
    hand_spaces,
    write_hand_files,
)

# --- bad input ---------------------------------------------------------------------------


def test_rated_ids_that_the_vectors_lack_are_named():
    images, captions = hand_spaces()
    ratings = hand_ratings()
    sts = ratings["STS"]
    ratings["STS"] = RatedPairs(
        "STS",
        sts.source,
        [*sts.first, "COCO_val2014:sentid:999"],
        [*sts.second, CAPTION_KEYS[0]],
        np.append(sts.scores, 1.0),
    )
    with pytest.raises(EvaluationError) as caught:
        evaluate(items=hand_items(), ratings=ratings, image_space=images, caption_space=captions, joint=True)
    message = str(caught.value)
    assert "hand/sts_val.csv" in message
    assert "the caption vectors (captions.npy) lack 1 caption id(s)" in message
    assert "'COCO_val2014:sentid:999'" in message


def test_rated_ids_outside_the_split_are_named_or_left_out_on_request():
    images, captions = hand_spaces()
    other = "COCO_val2014_000000000099.jpg"
    images = Space(np.vstack([IMAGE_VECTORS, np.ones((1, 3))]), [*IMAGE_KEYS, other], "images.npy")
    ratings = hand_ratings()
    sis = ratings["SIS"]
    ratings["SIS"] = RatedPairs(
        "SIS", sis.source, [*sis.first, other], [*sis.second, IMAGE_KEYS[0]], np.append(sis.scores, 4)
    )
    run = dict(items=hand_items(), ratings=ratings, image_space=images, caption_space=captions, joint=True)
    with pytest.raises(
        EvaluationError, match=r"1 image id\(s\) are not images of split 'val' of the dataset: '.*099.jpg'"
    ):
        evaluate(**run)
    report = evaluate(**run, restrict_to_split=True)
    assert report["ratings"]["SIS"] == {"file": "hand/sis_val.csv", "rows": 3, "rows_used": 2, "rows_left_out": 1}
    assert_retrieval_matches(report["retrieval"], EXPECTED)


def test_a_split_item_without_a_vector_is_named():
    images, captions = hand_spaces()
    captions = Space(CAPTION_VECTORS[:5], CAPTION_KEYS[:5], "captions.npy")
    with pytest.raises(
        EvaluationError, match=r"captions.npy: no vector for 1 caption\(s\) of the split: 'COCO_val2014:sentid:105'"
    ):
        evaluate(items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_vectors_with_nan_or_infinity_are_named(bad):
    images, captions = hand_spaces()
    vectors = CAPTION_VECTORS.copy()
    vectors[3, 1] = bad
    captions = Space(vectors, list(CAPTION_KEYS), "captions.npy")
    with pytest.raises(
        EvaluationError, match=r"captions.npy: row 3 \(id 'COCO_val2014:sentid:103'\) has a NaN or infinite value"
    ):
        evaluate(items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True)


def test_a_zero_vector_is_named():
    images, captions = hand_spaces()
    images = Space(np.vstack([IMAGE_VECTORS[:2], np.zeros((1, 3))]), list(IMAGE_KEYS), "images.npy")
    with pytest.raises(EvaluationError, match=r"images.npy: row 2 \(id 'COCO_val2014_000000000003.jpg'\) is all zeros"):
        evaluate(items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True)


def test_a_joint_space_needs_one_dimension():
    images, captions = hand_spaces()
    images = Space(np.eye(3, 4), list(IMAGE_KEYS), "images.npy")
    with pytest.raises(EvaluationError, match="image vectors have 4 dimensions and caption vectors 3"):
        evaluate(items=hand_items(), ratings=hand_ratings(), image_space=images, caption_space=captions, joint=True)


def test_nothing_to_evaluate_says_why():
    images, _ = hand_spaces()
    ratings = {"STS": hand_ratings()["STS"]}
    with pytest.raises(
        EvaluationError, match=r"nothing to evaluate on split 'val'.*image_to_image: no sis_<split>\.csv"
    ):
        evaluate(items=hand_items(), ratings=ratings, image_space=images, caption_space=None, joint=False)


def test_a_split_with_no_ratings_names_the_expected_files(tmp_path):
    with pytest.raises(EvaluationError) as caught:
        read_ratings_folder(tmp_path, "test")
    assert str(caught.value) == (
        f"split 'test' has no ratings files in {tmp_path}: "
        "expected rated rows in sts_test.csv, sis_test.csv, sits_test.csv"
    )
    (tmp_path / "sts_test.csv").write_text("caption1,caption2,agg_score,sampling_method\n")
    with pytest.raises(EvaluationError, match="split 'test' has only empty ratings files"):
        read_ratings_folder(tmp_path, "test")
    with pytest.raises(EvaluationError, match=r"ratings folder .*nowhere not found"):
        read_ratings_folder(tmp_path / "nowhere", "test")


def test_reads_the_files_of_the_split_only(tmp_path):
    paths = write_hand_files(tmp_path)
    (paths["ratings"] / "sts_test.csv").write_text("caption1,caption2,agg_score\n")
    ratings = read_ratings_folder(paths["ratings"], "val")
    assert set(ratings) == {"STS", "SIS", "SITS"}
    assert ratings["SITS"].first[:2] == CAPTION_KEYS[:2]
    assert ratings["SITS"].second[-1] == IMAGE_KEYS[0]
    assert ratings["SITS"].scores.tolist() == [s for _, _, s in SITS_ROWS]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty file; expected a header caption1,caption2,agg_score,sampling_method"),
        (
            "image1,image2,agg_score\n",
            "header is 'image1,image2,agg_score'; a STS file starts with caption1,caption2,agg_score",
        ),
        ("caption1,caption2,agg_score\na,b\n", "line 2 has 2 field(s); expected at least 3"),
        ("caption1,caption2,agg_score\na,,3\n", "line 2 has an empty item id"),
        ("caption1,caption2,agg_score\na,b,3\na,a,3\n", "line 3 pairs 'a' with itself"),
        ("caption1,caption2,agg_score\na,b,high\n", "line 2: agg_score 'high' is not a number"),
        ("caption1,caption2,agg_score\na,b,5.5\n", "line 2: agg_score 5.5 is outside 0-5"),
        ("caption1,caption2,agg_score\na,b,nan\n", "line 2: agg_score nan is outside 0-5"),
    ],
)
def test_bad_ratings_files_are_named_with_the_line(tmp_path, content, message):
    path = tmp_path / "sts_val.csv"
    path.write_text(content)
    with pytest.raises(EvaluationError) as caught:
        read_cxc_ratings(path, "STS")
    assert str(caught.value) == f"{path}: {message}"


def test_reads_the_public_release_files(shared_dir):
    for kind, name, rows in (
        ("STS", "sts_val.csv", 44_009),
        ("SIS", "sis_val.csv", 42_767),
        ("SITS", "sits_val.csv", 44_722),
    ):
        pairs = read_cxc_ratings(shared_dir / "cxc" / name, kind)
        assert len(pairs) == rows
        assert pairs.scores.min() >= 0 and pairs.scores.max() <= 5
    assert pairs.first[0].startswith("COCO_val2014:sentid:") and pairs.second[0].startswith("COCO_val2014_")


def test_load_space_checks_rows_against_ids(tmp_path):
    np.save(tmp_path / "v.npy", np.ones((3, 2), dtype=np.float32))
    (tmp_path / "ids.txt").write_text("a\nb\n")
    with pytest.raises(EvaluationError, match=r"has 3 rows but .*ids\.txt has 2 ids"):
        load_space(tmp_path / "v.npy", tmp_path / "ids.txt")
    (tmp_path / "ids.txt").write_text("a\nb\nc\n")
    space = load_space(tmp_path / "v.npy", tmp_path / "ids.txt")
    assert space.ids == ["a", "b", "c"] and space.dimension == 2
