"""The gold list's pages in the admin: a gold CSV uploaded with a preview of
every row and its problems, saved all or nothing; agreed pairs promoted; quiz questions
chosen against the pool size. Only staff with the gold pairs' change permission get in."""

import re

import pytest
from django.test import Client

from annotation.catalog.uploads import uploads_root
from annotation.models import GoldPair, QualitySettings
from annotation.quality.gold.upload import gold_pairs_upload
from annotation.serving import image_url_of
from tests.factories import CaptionFactory, ImageFactory, SplitFactory, UserFactory
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

UPLOAD = "/admin/annotation/goldpair/upload/"
SAVE = "/admin/annotation/goldpair/upload/save/"
PROMOTE = "/admin/annotation/goldpair/promote/"
QUIZ = "/admin/annotation/goldpair/quiz/"


def csv_file(name: str, text: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


@pytest.fixture
def split():
    return SplitFactory()


def images(split, n):
    return [ImageFactory(split=split, dataset=split.dataset) for _ in range(n)]


def stored_uploads() -> list:
    root = uploads_root()
    return sorted(root.iterdir()) if root.is_dir() else []


def flat(page: str) -> str:
    """The page with its runs of white space made single spaces."""
    return " ".join(page.split())


def token_of(page: str) -> str:
    return re.search(r'name="token" value="([^"]+)"', page).group(1)


def test_the_gold_list_links_its_pages(admin_client):
    page = admin_client.get("/admin/annotation/goldpair/").content.decode()
    for url in (UPLOAD, PROMOTE, QUIZ):
        assert f'href="{url}"' in page
    form = admin_client.get(UPLOAD)
    assert form.status_code == 200 and 'name="file"' in form.content.decode()


def test_a_preview_shows_each_row_as_rated_then_save_adds_them(admin_client, split):
    a, b, c = images(split, 3)
    text = CaptionFactory(image=a)
    sits = f"caption,image,gold_score,explanation\n{text.key},{b.key},4.5,the dog is there\n{text.key},{c.key},0.5,\n"
    answer = admin_client.post(UPLOAD, {"dataset": split.dataset.pk, "file": csv_file("sits.csv", sits)})
    page = answer.content.decode()
    assert answer.status_code == 200 and not GoldPair.objects.exists()
    assert "sits.csv: 2 SITS rows" in flat(page) and split.dataset.name in page
    assert text.text in page, "captions are shown as text"
    for image in (b, c):
        assert f'<img src="{image_url_of(split.dataset, image)}"' in page, "pictures where raters load them"
    assert "4.50" in page and "the dog is there" in page and 'class="errorlist"' not in page
    assert len(stored_uploads()) == 1, "the file waits in the upload area, not in memory"

    saved = admin_client.post(SAVE, {"token": token_of(page), "save": "Save"})
    assert saved.status_code == 302 and f"dataset__id__exact={split.dataset.pk}" in saved["Location"]
    assert sorted(GoldPair.objects.values_list("gold_score", "explanation", "source")) == [
        (0.5, "", "upload"),
        (4.5, "the dog is there", "upload"),
    ]
    assert GoldPair.objects.filter(created_by__isnull=False).count() == 2
    assert stored_uploads() == [], "the file goes once saved"
    again = admin_client.post(SAVE, {"token": token_of(page), "save": "Save"}, follow=True)
    assert "Nothing saved" in again.content.decode() and "gone" in again.content.decode()
    assert GoldPair.objects.count() == 2


def test_every_bad_row_is_named_and_nothing_can_be_saved(admin_client, split):
    a, b, c, d = images(split, 4)
    lines = [
        "image1,image2,gold_score,explanation",
        f"{a.key},{b.key},2,fine",
        f"{a.key},{c.key},9,too high",
        f"{a.key},missing.jpg,1,no such image",
        f"{c.key},{d.key},3,fine too",
        f"{b.key},{a.key},3,the pair of line 2 again",
    ]
    answer = admin_client.post(UPLOAD, {"dataset": split.dataset.pk, "file": csv_file("g.csv", "\n".join(lines))})
    page = answer.content.decode()
    problems = re.search(r'<ul class="errorlist" id="problems">(.*?)</ul>', page, re.S).group(1)
    assert "line 3, column gold_score: 9 is not between 0 and 5" in problems
    assert f"line 4, column image2: no image &#x27;missing.jpg&#x27; in {split.dataset.name}" in problems
    assert "line 6 repeats the pair on line 2" in problems
    assert "line 2" not in problems.replace("on line 2", "") and "line 5" not in problems
    assert "3 rows of g.csv have problems: nothing is saved" in flat(page)
    assert 'name="token"' not in page, "no save button for a file with problems"
    assert not GoldPair.objects.exists() and stored_uploads() == []


def test_a_file_that_went_bad_after_its_preview_saves_nothing(admin_client, split):
    a, b, c, d = images(split, 4)
    text = f"image1,image2,gold_score\n{a.key},{b.key},2\n{c.key},{d.key},3\n"
    page = admin_client.post(UPLOAD, {"dataset": split.dataset.pk, "file": csv_file("g.csv", text)}).content.decode()
    # Meanwhile the API adds line 3's pair: saving must add none of the file (not line 2 alone).
    other = uploads_root().parent / "other.csv"
    other.write_text(f"image1,image2,gold_score\n{d.key},{c.key},1\n")
    gold_pairs_upload(dataset=split.dataset, path=other)
    saved = admin_client.post(SAVE, {"token": token_of(page), "save": "Save"}, follow=True)
    content = saved.content.decode()
    assert "Nothing saved" in content and "line 3" in content and "already" in content
    assert GoldPair.objects.count() == 1 and stored_uploads() == []


def test_cancel_removes_the_file_and_saves_nothing(admin_client, split):
    a, b = images(split, 2)
    text = f"image1,image2,gold_score\n{a.key},{b.key},2\n"
    page = admin_client.post(UPLOAD, {"dataset": split.dataset.pk, "file": csv_file("g.csv", text)}).content.decode()
    answer = admin_client.post(SAVE, {"token": token_of(page), "cancel": "Cancel"})
    assert answer.status_code == 302 and stored_uploads() == [] and not GoldPair.objects.exists()


def test_a_bad_header_is_an_error_on_the_form_and_keeps_nothing(admin_client, split):
    answer = admin_client.post(UPLOAD, {"dataset": split.dataset.pk, "file": csv_file("g.csv", "a,b\n1,2\n")})
    page = answer.content.decode()
    assert "g.csv: the header must name one pair of id columns" in page and 'name="file"' in page
    assert stored_uploads() == []


def test_a_preview_token_is_the_admins_own_and_unforgeable(admin_client, split):
    a, b = images(split, 2)
    text = f"image1,image2,gold_score\n{a.key},{b.key},2\n"
    page = admin_client.post(UPLOAD, {"dataset": split.dataset.pk, "file": csv_file("g.csv", text)}).content.decode()
    other = Client()
    other.force_login(UserFactory(is_staff=True, is_superuser=True))
    refused = other.post(SAVE, {"token": token_of(page), "save": "Save"}, follow=True).content.decode()
    assert "belongs to another admin" in refused
    forged = admin_client.post(SAVE, {"token": token_of(page)[:-2] + "xx", "save": "Save"}, follow=True)
    assert "not one this server made" in forged.content.decode()
    assert not GoldPair.objects.exists() and len(stored_uploads()) == 1


def test_promote_lists_agreed_complete_pairs_and_promotes_the_chosen(admin_client, clock):
    split = SplitFactory()
    _, pairs = queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    raters = [rater(["SIS"]) for _ in range(2)]
    for number, user in enumerate(raters):
        for step in range(3):
            assignment = claim(user, split.dataset)
            disagreed = assignment.pair_id == pairs[2].id
            submit(user, split.dataset, assignment.slot_id, f"{number}{step}", score=number * 4.0 if disagreed else 3.2)
    query = {"dataset": split.dataset.pk, "kind": "SIS", "max_sd": 0.5}
    page = admin_client.get(PROMOTE, query).content.decode()
    assert "<strong>2</strong> complete SIS pairs" in flat(page)
    assert f'name="pair" value="{pairs[0].id}"' in page and f'name="pair" value="{pairs[1].id}"' in page
    assert f'value="{pairs[2].id}"' not in page, "a pair its raters disagree on is no candidate"
    assert "3.20" in page and page.count("<img src=") == 4
    answer = admin_client.post(PROMOTE, {**query, "pair": [pairs[1].id]})
    assert answer.status_code == 302
    gold = GoldPair.objects.get()
    assert (gold.source_pair_id, gold.gold_score, gold.source) == (pairs[1].id, 3.2, "promoted")
    assert "<strong>1</strong> complete SIS pair " in flat(admin_client.get(PROMOTE, query).content.decode())
    admin_client.post(PROMOTE, {**query, "pair": [pairs[2].id]})
    assert GoldPair.objects.count() == 1, "a pair that is no candidate is not promoted"


def test_quiz_questions_are_chosen_against_the_pool_size(admin_client, split, tmp_path):
    pictures = images(split, 6)
    lines = ["image1,image2,gold_score,explanation"]
    lines += [f"{pictures[i].key},{pictures[i + 1].key},{i},why {i}" for i in range(5)]
    (tmp_path / "g.csv").write_text("\n".join(lines) + "\n")
    gold_pairs_upload(dataset=split.dataset, path=tmp_path / "g.csv")
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=1)
    ids = list(GoldPair.objects.order_by("pk").values_list("pk", flat=True))
    query = {"dataset": split.dataset.pk, "kind": "SIS"}
    page = admin_client.get(QUIZ, query).content.decode()
    assert 'class="pool too-small"' in page and "SIS quiz: 0 question(s) in the pool" in flat(page)
    # The page says how the quiz uses the pool: five times the length, nothing shown early.
    assert "at least five times the quiz length" in flat(page) and "once it ends" in flat(page)
    assert page.count('name="quiz"') == 5 and "checked" not in page

    answer = admin_client.post(QUIZ, {**query, "listed": ids, "quiz": ids[:3]}, follow=True)
    content = flat(answer.content.decode())
    assert "3 put in the quiz, 0 taken out" in content
    assert "too small, the quiz cannot run: attempts of 1 need at least 5" in content and "add 2 more" in content
    assert set(GoldPair.objects.filter(in_quiz=True).values_list("pk", flat=True)) == set(ids[:3])

    admin_client.post(QUIZ, {**query, "listed": ids, "quiz": [ids[0], *ids[2:]]})
    assert set(GoldPair.objects.filter(in_quiz=True).values_list("pk", flat=True)) == {ids[0], *ids[2:]}
    admin_client.post(QUIZ, {**query, "listed": ids, "quiz": ids})
    page = admin_client.get(QUIZ, query).content.decode()
    assert 'class="pool"' in page and "5 question(s) in the pool, 1 per attempt (which needs at least 5)." in flat(page)
    # Pairs the form did not list are left as they are.
    admin_client.post(QUIZ, {**query, "listed": ids[:1]})
    assert set(GoldPair.objects.filter(in_quiz=True).values_list("pk", flat=True)) == set(ids[1:])


@pytest.mark.parametrize("role", ["rater", "researcher", "admin", None])
def test_non_staff_are_sent_to_the_login(split, role):
    a, b = images(split, 2)
    client = Client()
    client.force_login(UserFactory(roles=[role] if role else []))
    for url in (UPLOAD, PROMOTE, QUIZ):
        answer = client.get(url)
        assert answer.status_code == 302 and answer["Location"].startswith("/admin/login/"), url
    text = f"image1,image2,gold_score\n{a.key},{b.key},2\n"
    answer = client.post(UPLOAD, {"dataset": split.dataset.pk, "file": csv_file("g.csv", text)})
    assert answer.status_code == 302 and stored_uploads() == []
    answer = client.post(QUIZ, {"dataset": split.dataset.pk, "kind": "SIS", "listed": [1], "quiz": [1]})
    assert answer.status_code == 302 and not GoldPair.objects.exists()


def test_staff_without_the_gold_permission_are_refused(split):
    a, b = images(split, 2)
    client = Client()
    client.force_login(UserFactory(is_staff=True))
    for url in (UPLOAD, PROMOTE, QUIZ, f"{QUIZ}?dataset={split.dataset.pk}&kind=SIS"):
        assert client.get(url).status_code == 403, url
    text = f"image1,image2,gold_score\n{a.key},{b.key},2\n"
    answer = client.post(UPLOAD, {"dataset": split.dataset.pk, "file": csv_file("g.csv", text)})
    assert answer.status_code == 403 and stored_uploads() == []
    assert client.post(SAVE, {"token": "x", "save": "Save"}).status_code == 403
