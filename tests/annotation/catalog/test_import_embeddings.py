"""Embedding import: validation of every bad input, nothing written on failure."""

from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.catalog.services import embedding_space_import
from annotation.core.errors import DatasetImportError, NotFound
from annotation.models import EmbeddingSpace
from tests.factories import CaptionFactory, ImageFactory, SplitFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def items():
    split = SplitFactory(dataset__name="coco")
    images = [ImageFactory(split=split) for _ in range(3)]
    captions = [CaptionFactory(image=image) for image in images for _ in range(2)]
    return images, captions


def write_inputs(tmp_path, vectors, ids):
    np.save(tmp_path / "v.npy", vectors)
    (tmp_path / "ids.txt").write_text("".join(f"{key}\n" for key in ids))
    return tmp_path / "v.npy", tmp_path / "ids.txt"


def stored_files(settings):
    folder = settings.DATA_DIR / "embeddings"
    return sorted(p.name for p in folder.rglob("*")) if folder.exists() else []


def test_import_stores_normalized_float32(tmp_path, items, settings):
    images, _ = items
    vectors = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0]])
    v, i = write_inputs(tmp_path, vectors, [im.key for im in images])
    space = embedding_space_import(
        dataset_name="coco", space_name="effnet", modality="image", vectors_path=v, ids_path=i, model_name="m"
    )
    assert (space.dimension, space.count, space.modality) == (2, 3, "image")
    stored = np.load(space.vectors_path, mmap_mode="r")
    assert stored.dtype == np.float32
    np.testing.assert_allclose(stored[0], [0.6, 0.8], rtol=1e-6)
    assert Path(space.ids_path).read_text().split() == [im.key for im in images]


def test_several_caption_spaces_allowed(tmp_path, items):
    _, captions = items
    keys = [c.key for c in captions]
    for name, dim in (("minilm", 384), ("other", 512)):
        v, i = write_inputs(tmp_path, np.random.default_rng(0).normal(size=(len(keys), dim)), keys)
        embedding_space_import(dataset_name="coco", space_name=name, modality="caption", vectors_path=v, ids_path=i)
    assert sorted(EmbeddingSpace.objects.values_list("name", "dimension")) == [("minilm", 384), ("other", 512)]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("unknown_id", "1 id\\(s\\) are not images of dataset 'coco': 'COCO_val2014_999.jpg'"),
        ("caption_as_image", "are not images of dataset"),
        ("nan", "row 1 \\(id '.*'\\) has a NaN or infinite value"),
        ("zero_row", "row 2 \\(id '.*'\\) is all zeros"),
        ("wrong_shape", "expected a 2-D array"),
        ("int_dtype", "expected floating point"),
        ("count_mismatch", "has 3 rows but .*ids.txt has 2 ids"),
        ("duplicate_id", "duplicate id .* on lines 1 and 3"),
        ("nul_id", r"ids.txt: the id on line 2 has a NUL character \(U\+0000\) at character 4"),
    ],
)
def test_bad_input_names_the_problem_and_writes_nothing(tmp_path, items, settings, case, message):
    images, captions = items
    keys = [im.key for im in images]
    vectors = np.ones((3, 4))
    if case == "unknown_id":
        keys[1] = "COCO_val2014_999.jpg"
    elif case == "caption_as_image":
        keys[0] = captions[0].key
    elif case == "nan":
        vectors[1, 2] = np.nan
    elif case == "zero_row":
        vectors[2] = 0.0
    elif case == "wrong_shape":
        vectors = np.ones(3)
    elif case == "int_dtype":
        vectors = np.ones((3, 4), dtype=np.int32)
    elif case == "count_mismatch":
        keys = keys[:2]
    elif case == "duplicate_id":
        keys[2] = keys[0]
    elif case == "nul_id":
        keys[1] = keys[1][:3] + "\x00" + keys[1][3:]
    v, i = write_inputs(tmp_path, vectors, keys)
    with pytest.raises(DatasetImportError, match=message):
        embedding_space_import(dataset_name="coco", space_name="s", modality="image", vectors_path=v, ids_path=i)
    assert EmbeddingSpace.objects.count() == 0
    assert stored_files(settings) == []


def test_unknown_dataset_and_duplicate_space(tmp_path, items):
    images, _ = items
    v, i = write_inputs(tmp_path, np.ones((3, 2)), [im.key for im in images])
    with pytest.raises(NotFound, match="no dataset named 'nope'"):
        embedding_space_import(dataset_name="nope", space_name="s", modality="image", vectors_path=v, ids_path=i)
    embedding_space_import(dataset_name="coco", space_name="s", modality="image", vectors_path=v, ids_path=i)
    with pytest.raises(DatasetImportError, match="already has an embedding space named 's'"):
        embedding_space_import(dataset_name="coco", space_name="s", modality="image", vectors_path=v, ids_path=i)


def test_command(tmp_path, items, capsys):
    _, captions = items
    v, i = write_inputs(tmp_path, np.ones((6, 5)), [c.key for c in captions])
    args = ["--dataset", "coco", "--space", "txt", "--modality", "caption", "--vectors", str(v), "--ids", str(i)]
    call_command("import_embeddings", *args)
    assert "6 caption vectors of 5 dims" in capsys.readouterr().out
    with pytest.raises(CommandError, match="already has an embedding space"):
        call_command("import_embeddings", *args)
