"""The gold CSV's preview step, the details `make mutation` found untested
(annotation.quality.gold.staging): a preview expires, its refusals say exactly what went
wrong, and the preview shows both items of every pair and the dataset it is for."""

import time

import pytest
from django.core import signing
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import GoldPair, Image
from annotation.quality.gold.gold_file import GoldInputError
from annotation.quality.gold.staging import SALT, gold_upload_cancel, gold_upload_preview, gold_upload_save
from annotation.serving import image_url_of
from tests.factories import CaptionFactory, ImageFactory, SplitFactory, UserFactory

pytestmark = pytest.mark.django_db

UPLOAD = "/admin/annotation/goldpair/upload/"


@pytest.fixture
def split():
    return SplitFactory()


def sis_file(split):
    a, b = (ImageFactory(split=split, dataset=split.dataset) for _ in range(2))
    return SimpleUploadedFile("g.csv", f"image1,image2,gold_score\n{a.key},{b.key},2\n".encode())


def made_ago(monkeypatch, seconds: float):
    """Sign tokens as if made ``seconds`` ago (the signer's clock, not the database's)."""
    monkeypatch.setattr(
        signing.TimestampSigner, "timestamp", lambda self: signing.b62_encode(int(time.time() - seconds))
    )


def test_a_preview_older_than_six_hours_cannot_be_saved(split, monkeypatch):
    admin = UserFactory(is_staff=True, is_superuser=True)
    made_ago(monkeypatch, 6 * 3600 + 60)
    stale = gold_upload_preview(uploaded_file=sis_file(split), dataset=split.dataset, user=admin).token
    made_ago(monkeypatch, 6 * 3600 - 60)
    fresh = gold_upload_preview(uploaded_file=sis_file(split), dataset=split.dataset, user=admin).token
    with pytest.raises(GoldInputError, match="^the preview is older than 6 hours; upload the file again$"):
        gold_upload_save(token=stale, user=admin)
    assert not GoldPair.objects.exists()
    assert gold_upload_save(token=fresh, user=admin) == (split.dataset, 1), "under six hours it still saves"


def test_refusing_a_token_says_why_exactly(split):
    admin, other = (UserFactory(is_staff=True, is_superuser=True) for _ in range(2))
    token = gold_upload_preview(uploaded_file=sis_file(split), dataset=split.dataset, user=admin).token
    with pytest.raises(GoldInputError, match="^this preview belongs to another admin; upload the file yourself$"):
        gold_upload_save(token=token, user=other)
    with pytest.raises(GoldInputError) as forged:
        gold_upload_save(token=token[:-2] + "xx", user=admin)
    assert str(forged.value) == "the preview's token is not one this server made; upload the file again"
    assert not GoldPair.objects.exists()


def test_a_preview_with_problems_still_names_its_dataset(admin_client, split):
    a = ImageFactory(split=split, dataset=split.dataset)
    text = f"image1,image2,gold_score\n{a.key},missing.jpg,2\n"
    upload = SimpleUploadedFile("g.csv", text.encode(), content_type="text/csv")
    page = admin_client.post(UPLOAD, {"dataset": split.dataset.pk, "file": upload}).content.decode()
    assert 'id="problems"' in page and f"for <strong>{split.dataset.name}</strong>" in page


def test_a_preview_shows_both_pictures_and_both_captions_of_a_pair(admin_client, split):
    a, b = (ImageFactory(split=split, dataset=split.dataset) for _ in range(2))
    first, second = CaptionFactory(image=a), CaptionFactory(image=b)
    files = {
        "sis.csv": f"image1,image2,gold_score\n{a.key},{b.key},2\n",
        "sts.csv": f"caption1,caption2,gold_score\n{first.key},{second.key},3\n",
    }
    pages = {
        name: admin_client.post(
            UPLOAD, {"dataset": split.dataset.pk, "file": SimpleUploadedFile(name, text.encode())}
        ).content.decode()
        for name, text in files.items()
    }
    for image in (a, b):
        assert f'<img src="{image_url_of(split.dataset, image)}"' in pages["sis.csv"]
    for caption in (first, second):
        assert f"<q>{caption.text}</q>" in pages["sts.csv"]


def test_a_signed_token_naming_a_folder_outside_the_upload_area_is_refused(split, tmp_path):
    """Defence in depth: even a token this server signed may not point the save elsewhere."""
    admin = UserFactory(is_staff=True, is_superuser=True)
    outside = tmp_path / "g.csv"
    outside.write_text("image1,image2,gold_score\n")
    staged = {"folder": str(tmp_path), "name": "g.csv", "dataset": split.dataset.pk, "user": admin.pk}
    token = signing.dumps(staged, salt=SALT)
    with pytest.raises(GoldInputError) as refused:
        gold_upload_cancel(token=token, user=admin)
    assert str(refused.value) == "the preview's token names no upload; upload the file again"
    assert outside.is_file()


def test_a_preview_saved_already_or_of_a_deleted_dataset_is_refused(split):
    admin = UserFactory(is_staff=True, is_superuser=True)
    saved = gold_upload_preview(uploaded_file=sis_file(split), dataset=split.dataset, user=admin).token
    gold_upload_save(token=saved, user=admin)
    with pytest.raises(GoldInputError) as gone:
        gold_upload_cancel(token=saved, user=admin)
    assert str(gone.value) == "the previewed file is gone (saved or cancelled already); upload it again"
    other = SplitFactory()
    orphan = gold_upload_preview(uploaded_file=sis_file(other), dataset=other.dataset, user=admin).token
    Image.objects.filter(dataset=other.dataset).delete()
    other.delete()
    other.dataset.delete()
    with pytest.raises(GoldInputError) as deleted:
        gold_upload_save(token=orphan, user=admin)
    assert str(deleted.value) == "the preview's dataset was deleted"
