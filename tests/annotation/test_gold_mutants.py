"""Promoting agreed pairs to gold, the details `make mutation` found untested: only
complete pairs in the queue, the agreement bound itself, the reference's precision, the
limit, the pair's items, its order and who promoted, and the candidates the admin's promote
page lists (annotation.quality.gold.upload.gold_pairs_promote, gold_promote_candidates)."""

import re

import pytest
from rest_framework.test import APIClient

from annotation.core.inputs import nul_problem
from annotation.models import GoldPair, Pair, SamplingMethod, TaskKind
from annotation.quality.gold.gold_file import MAX_EXPLANATION, gold_file_check
from annotation.quality.gold.upload import GoldInputError, gold_pairs_promote, gold_promote_candidates
from annotation.rating.policy import slot_skip
from annotation.serving.pairs import PairSpec, pairs_create_bulk, pairs_retire
from tests.factories import CaptionFactory, ImageFactory, SamplingBatchFactory, SplitFactory, UserFactory
from tests.support.exclusion_support import exclude
from tests.support.queue_support import claim, queue_pairs, rater, submit

PROMOTE = "/admin/annotation/goldpair/promote/"

pytestmark = pytest.mark.django_db


def rated_sts(scores_per_pair: list[list[float]], *, incomplete: int = 0):
    """STS pairs, pair i rated with scores_per_pair[i] (one rater per score); the first
    ``incomplete`` pairs get one slot more than they are rated, so they stay incomplete."""
    split = SplitFactory()
    width = max(len(scores) for scores in scores_per_pair)
    _, pairs = queue_pairs(split=split, kind="STS", n_pairs=len(scores_per_pair), ratings_per_pair=width)
    wanted = {pair.id: scores for pair, scores in zip(pairs, scores_per_pair, strict=True)}
    for number in range(width):
        user = rater(["STS"])
        while (assignment := claim(user, split.dataset)) is not None:
            scores = wanted[assignment.pair_id]
            if number < len(scores):
                submit(user, split.dataset, assignment.slot_id, f"{number}-{assignment.pair_id}", score=scores[number])
            else:
                slot_skip(rater=user, dataset=split.dataset.name, slot_id=assignment.slot_id)
    return split.dataset, pairs


def test_the_api_promotes_complete_agreed_pairs_with_their_items_and_promoter(clock):
    admin = UserFactory(roles=["admin"])
    admin_api = APIClient()
    admin_api.force_authenticate(admin)
    dataset, pairs = rated_sts([[3.0, 3.0], [1.0, 2.0], [4.0, 4.0], [2.0, 2.0]])
    pairs_retire(pair_ids=[pairs[2].id])
    highest_pair = Pair.objects.order_by("-id").values_list("id", flat=True).first()
    answer = admin_api.post(
        f"/api/datasets/{dataset.name}/gold/promote/", {"kind": "STS", "max_sd": 0.6}, format="json"
    )
    assert answer.status_code == 201, answer.json()
    assert answer.json() == {"created": 2}, "sd 0.71 is over 0.6 (0.5 only without Bessel's correction); retired"
    promoted = {gold.source_pair_id: gold for gold in GoldPair.objects.all()}
    assert set(promoted) == {pairs[0].id, pairs[3].id}
    for pair in (pairs[0], pairs[3]):
        gold = promoted[pair.id]
        items = (gold.caption_a_id, gold.caption_b_id, gold.image_a_id, gold.image_b_id, gold.swapped)
        assert items == (pair.caption_a_id, pair.caption_b_id, pair.image_a_id, pair.image_b_id, pair.swapped)
        assert gold.created_by == admin
        assert gold.pk > highest_pair, "gold takes its id from the pairs' sequence"


def test_the_reference_keeps_four_decimals_and_the_limit_holds(clock):
    dataset, pairs = rated_sts([[1.0, 2.0, 2.0], [2.0, 3.0, 3.0]])
    admin = UserFactory(roles=["admin"])
    assert gold_pairs_promote(dataset=dataset, kind="STS", max_sd=1.0, limit=1, created_by=admin) == 1
    assert GoldPair.objects.get().gold_score == pytest.approx(1.6667, abs=1e-9)
    assert gold_pairs_promote(dataset=dataset, kind="STS", max_sd=1.0, limit=1, created_by=admin) == 1
    assert sorted(GoldPair.objects.values_list("source_pair_id", flat=True)) == [pairs[0].id, pairs[1].id]


def test_incomplete_pairs_are_not_promoted(clock):
    dataset, _ = rated_sts([[3.0, 3.0], [3.0]])
    assert gold_pairs_promote(dataset=dataset, kind="STS", max_sd=0) == 1


@pytest.mark.parametrize(("max_sd", "limit"), [(-0.01, 1), (5.01, 1), (1.0, 0)])
def test_bad_bounds_are_refused(max_sd, limit):
    with pytest.raises(GoldInputError, match="^max_sd must be between 0 and 5 and limit at least 1$"):
        gold_pairs_promote(dataset=SplitFactory().dataset, kind="STS", max_sd=max_sd, limit=limit)


@pytest.mark.parametrize("max_sd", [0.0, 5.0])
def test_the_bounds_themselves_are_accepted(max_sd, clock):
    dataset, _ = rated_sts([[3.0, 3.0]])
    assert gold_pairs_promote(dataset=dataset, kind="STS", max_sd=max_sd, limit=1) == 1


def test_candidates_are_the_complete_agreed_pairs_of_that_dataset_and_kind(clock):
    """The second pair's two ratings agree, but it waits for a third."""
    dataset, pairs = rated_sts([[3.0, 3.0, 3.0], [2.0, 2.0]])
    rated_sts([[4.0, 4.0]])
    assert [c.pair_id for c in gold_promote_candidates(dataset=dataset, kind="STS", max_sd=0)] == [pairs[0].id]
    assert gold_promote_candidates(dataset=dataset, kind="SIS", max_sd=0) == []


def test_candidates_for_a_bound_over_five_are_refused():
    with pytest.raises(GoldInputError, match="^max_sd must be between 0 and 5$"):
        gold_promote_candidates(dataset=SplitFactory().dataset, kind="STS", max_sd=5.5)


def test_the_promote_page_shows_each_candidates_ratings_mean_and_sample_sd(admin_client, clock):
    dataset, pairs = rated_sts([[1.0, 2.0, 2.0]])
    page = admin_client.get(PROMOTE, {"dataset": dataset.pk, "kind": "STS", "max_sd": 1}).content.decode()
    row = re.search(rf'name="pair" value="{pairs[0].id}".*?</tr>', page, re.S).group(0)
    cells = re.findall(r'<td data-label="[^"]+">([^<]*)</td>', row)
    assert cells == ["3", "1.67", "0.58"], "the sample sd (0.47 would be the population's)"


def test_a_promoted_pair_keeps_the_order_its_raters_saw(clock):
    split = SplitFactory()
    batch = SamplingBatchFactory(split=split, dataset=split.dataset, ratings_per_pair=2)
    first, second = (ImageFactory(split=split, dataset=split.dataset) for _ in range(2))
    spec = PairSpec(TaskKind.SIS, SamplingMethod.I2I_CSIM, image_a=second.id, image_b=first.id)
    pairs_create_bulk(batch=batch, specs=[spec])
    for number in range(2):
        user = rater(["SIS"])
        submit(user, split.dataset, claim(user, split.dataset).slot_id, f"seen-{number}", score=3.0)
    assert gold_pairs_promote(dataset=split.dataset, kind="SIS", max_sd=0) == 1
    gold = GoldPair.objects.get()
    assert (gold.image_a_id, gold.image_b_id, gold.swapped) == (first.id, second.id, True), "second first, as sampled"


def test_an_excluded_rating_does_not_count_against_agreement(django_capture_on_commit_callbacks, clock):
    """The excluded rater's 0 is replaced by a 3: the pair's valid ratings agree."""
    split = SplitFactory()
    _, (pair,) = queue_pairs(split=split, kind="STS", n_pairs=1, ratings_per_pair=2)
    careless, careful, later = (rater(["STS"]) for _ in range(3))
    for user, score in ((careless, 0.0), (careful, 3.0)):
        submit(user, split.dataset, claim(user, split.dataset).slot_id, f"{user.pk}", score=score)
    admin = UserFactory(roles=["admin"])
    clock.advance(60)
    exclude(django_capture_on_commit_callbacks, dataset=split.dataset, rater=careless, reason="x", created_by=admin)
    submit(later, split.dataset, claim(later, split.dataset).slot_id, "later", score=3.0)
    (candidate,) = gold_promote_candidates(dataset=split.dataset, kind="STS", max_sd=0)
    assert (candidate.pair_id, candidate.ratings, candidate.mean) == (pair.id, 2, 3.0)


# --- a gold file's rows, each with its problem (gold_file._rows, _parse) -------------------


def checked_rows(split, tmp_path, lines: list[str]) -> dict[int, str | None]:
    """{line number: its problem (None: none)} of a gold CSV of ``lines`` (header first)."""
    path = tmp_path / "gold-rows.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    checked = gold_file_check(dataset=split.dataset, path=path)
    return {row.line: row.problem for row in checked.rows}


def test_each_row_of_a_gold_file_names_its_own_problem(tmp_path):
    split = SplitFactory()
    a, b, c, d = (ImageFactory(split=split, dataset=split.dataset).key for _ in range(4))
    long_text, longest = "x" * (MAX_EXPLANATION + 1), "x" * MAX_EXPLANATION
    rows = checked_rows(
        split,
        tmp_path,
        [
            "image1,image2,gold_score,explanation",
            f"{a},{b},1,fine",
            f"{a},{c},2",
            f"{a}\x00,{d},1,x",
            f",{b},1,x",
            f"{c},,1,x",
            f"{c},{d},1,{long_text}",
            ",,,",
            f"{b},{d},1,{longest}",
        ],
    )
    assert rows == {
        2: None,
        3: "line 3 has 3 fields, the header 4",
        4: f"line 4, column image1: {nul_problem(a + chr(0))}",
        5: "line 5, column image1: empty id",
        6: "line 6, column image2: empty id",
        7: f"line 7, column explanation: longer than {MAX_EXPLANATION} characters",
        9: None,
    }, "the blank line 8 is passed over, not the end of the rows"


def test_a_gold_row_without_an_explanation_column_explains_nothing(tmp_path):
    split = SplitFactory()
    a, b = (ImageFactory(split=split, dataset=split.dataset).key for _ in range(2))
    path = tmp_path / "gold.csv"
    path.write_text(f"image1,image2,gold_score\n{a},{b},1\n")
    assert [row.explanation for row in gold_file_check(dataset=split.dataset, path=path).rows] == [""]


def test_a_caption_image_row_and_its_mirror_are_two_pairs(tmp_path):
    """SITS pairs are ordered (a caption, then an image): the same two keys the other way
    round name another pair, not a repeat."""
    split = SplitFactory()
    image_x, image_y = (
        ImageFactory(split=split, dataset=split.dataset, key="x"),
        ImageFactory(split=split, dataset=split.dataset, key="y"),
    )
    CaptionFactory(image=image_x, key="y")
    CaptionFactory(image=image_y, key="x")
    rows = checked_rows(split, tmp_path, ["caption,image,gold_score", "x,y,1", "y,x,2"])
    assert rows == {2: None, 3: None}


def upload_refusal(split, path) -> str:
    with pytest.raises(GoldInputError) as refused:
        gold_file_check(dataset=split.dataset, path=path)
    return str(refused.value)


def test_the_refusals_of_a_whole_gold_file_read_whole(tmp_path):
    split = SplitFactory()
    a, b = (ImageFactory(split=split, dataset=split.dataset).key for _ in range(2))
    path = tmp_path / "gold.csv"
    cases = [
        ("", "gold.csv: the file is empty; expected a CSV header line"),
        ("image1,image2,gold_score\n", "gold.csv: no pairs below the header"),
        ("image1,image2\x00,gold_score\n", f"gold.csv: line 1, column 2: {nul_problem('image2' + chr(0))}"),
        (
            "image1,gold_score\n",
            "gold.csv: the header must name one pair of id columns "
            "(caption1,caption2 or image1,image2 or caption,image) and gold_score",
        ),
        (
            f"image1,image2,gold_score,extra\n{a},{b},1,x\n",
            "gold.csv: columns must be image1,image2,gold_score and optionally explanation "
            "(and a pair list's sampling_method,agg_score, not read); got image1,image2,gold_score,extra",
        ),
        (f"image1,image2,gold_score\n{a},{b},1,{'x' * 200_000}\n", "gold.csv: not a readable CSV file (field larger"),
    ]
    for text, message in cases:
        path.write_text(text)
        assert upload_refusal(split, path).startswith(message), text[:40]
    path.write_bytes(b"image1,image2,gold_score\n\xe9,b,1\n")
    assert upload_refusal(split, path).startswith("gold.csv: not UTF-8 text (")


def test_a_gold_file_keeps_line_breaks_inside_a_quoted_explanation_and_takes_a_bom(tmp_path):
    split = SplitFactory()
    a, b = (ImageFactory(split=split, dataset=split.dataset).key for _ in range(2))
    path = tmp_path / "gold.csv"
    path.write_bytes(f'\ufeffimage1,image2,gold_score,explanation\r\n{a},{b},1,"first\r\nsecond"\r\n'.encode())
    (row,) = gold_file_check(dataset=split.dataset, path=path).rows
    assert (row.problem, row.explanation) == (None, "first\r\nsecond")


def test_gold_items_are_found_in_the_dataset_and_in_one_split(tmp_path):
    split, elsewhere = SplitFactory(), SplitFactory()
    other_split = SplitFactory(dataset=split.dataset, name="train")
    a = ImageFactory(split=split, dataset=split.dataset).key
    b = ImageFactory(split=other_split, dataset=split.dataset).key
    foreign = ImageFactory(split=elsewhere, dataset=elsewhere.dataset, key="foreign.jpg").key
    rows = checked_rows(split, tmp_path, ["image1,image2,gold_score", f"{a},{b},1", f"{a},{foreign},1"])
    assert rows == {
        2: "line 2: the two items are in different splits",
        3: f"line 3, column image2: no image 'foreign.jpg' in {split.dataset.name}",
    }


def test_a_caption_key_of_another_dataset_is_not_found(tmp_path):
    split, elsewhere = SplitFactory(), SplitFactory()
    image = ImageFactory(split=split, dataset=split.dataset)
    here = CaptionFactory(image=image).key
    CaptionFactory(image=ImageFactory(split=elsewhere, dataset=elsewhere.dataset), key="foreign-caption")
    rows = checked_rows(split, tmp_path, ["caption1,caption2,gold_score", f"{here},foreign-caption,1"])
    assert rows == {2: f"line 2, column caption2: no caption 'foreign-caption' in {split.dataset.name}"}
