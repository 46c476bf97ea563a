"""Explained failures at CxC scale: the failure set, its concept metrics and the adversarial
re-ranking for 25,000 queries over 5,000 images, 384-d, in one process, pure numpy (what
an evaluation run with ``explain`` and ``adversarial`` computes per model).

Synthetic data, seeded: 5,000 images of 640 x 480 pixels, each with a Poisson number of
objects of mean 7 (COCO's density: about 7.3 per image) from the 80 COCO categories (the
first, person, drawn ten times as often as each other, as in COCO) with random boxes;
five captions per image made from its objects with adjectives, colour and size words
("a wet red dog near a small bench"). The caption vectors are the ``embed`` command's
``hashing`` encoder's (384-d), which also re-embeds the changed captions: a fast stand-in
for a model's encoder, so ``adversarial_s`` measures the substitutions and re-ranking, not
a neural network.

Measured: ``metrics_s``, the ranking of every caption against the images' corpora, the
failure set and every failure's concept metrics in both forms with its explanation and
the global means (``explained_model``); ``adversarial_s``, the substitutions of the three
kinds, their re-embedding and re-ranking (``adversarial_run``); ``peak_rss_mib``, the
process's peak resident memory. Building the data is not counted. Last line:
{"queries", "failures", "metrics_s", "adversarial_s", "peak_rss_mib", ...}.

Environment (under BENCH_SMOKE=1 in brackets): BENCH_IMAGES 5,000 [300], BENCH_DIM 384 [64].
"""

from __future__ import annotations

import time

import numpy as np
from _common import peak_rss_mib, print_figures, sized

from annotation.evaluation.explain.adversarial import COLOUR_WORDS, LARGE, SMALL, adversarial_run, substitutes
from annotation.evaluation.explain.concepts import AnnotatedObject
from annotation.evaluation.explain.failures import ImageObjects, explained_model
from annotation.evaluation.explain.ranking import build_corpora
from annotation.evaluation.explain.vocabulary import vocabulary
from sampling.encoders import hashing_encoder

N_IMAGES = sized("BENCH_IMAGES", 5_000, 300)
DIM = sized("BENCH_DIM", 384, 64)
CAPTIONS_PER_IMAGE = 5
OBJECTS_PER_IMAGE = 7.0
WIDTH, HEIGHT = 640, 480
ADJECTIVES = ("wet", "dry", "old", "young", "new", "empty", "full", "open", "clean", "dirty", "happy", "sad")
PLACES = ("near", "beside", "behind", "with", "under", "on")


def synthetic_objects(rng: np.random.Generator) -> tuple[list[str], ImageObjects]:
    """The 80 COCO categories and every image's objects, areas as shares of the image."""
    names = [c.name for c in vocabulary().categories if c.coco_id is not None]
    weights = np.ones(len(names))
    weights[0] = 10.0  # person
    weights /= weights.sum()
    per_image = []
    for count in np.maximum(1, rng.poisson(OBJECTS_PER_IMAGE, N_IMAGES)):
        categories = rng.choice(len(names), size=count, p=weights)
        widths, heights = rng.uniform(5, WIDTH, count), rng.uniform(5, HEIGHT, count)
        fill = rng.uniform(0.3, 1.0, count)  # a mask covers part of its box
        areas = widths * heights * fill / (WIDTH * HEIGHT)
        per_image.append(tuple(AnnotatedObject(names[c], float(a)) for c, a in zip(categories, areas, strict=True)))
    return names, ImageObjects(per_image, np.ones(N_IMAGES, bool))


def synthetic_captions(rng: np.random.Generator, images: ImageObjects) -> tuple[list[str], np.ndarray]:
    """Five captions per image naming one or two of its objects, with adjectives, colours
    and size words drawn at random; (texts, caption_image int64)."""
    texts = []
    sizes = LARGE + SMALL
    for objects in images.objects:
        for _ in range(CAPTIONS_PER_IMAGE):
            first, second = (objects[int(rng.integers(len(objects)))].category for _ in range(2))
            words = ["a"]
            if rng.random() < 0.5:
                words.append(ADJECTIVES[int(rng.integers(len(ADJECTIVES)))])
            if rng.random() < 0.5:
                words.append(COLOUR_WORDS[int(rng.integers(len(COLOUR_WORDS)))])
            words.append(first)
            words += [PLACES[int(rng.integers(len(PLACES)))], "a"]
            if rng.random() < 0.4:
                words.append(sizes[int(rng.integers(len(sizes)))])
            words.append(second)
            texts.append(" ".join(words) + ".")
    return texts, np.repeat(np.arange(N_IMAGES), CAPTIONS_PER_IMAGE)


def main() -> None:
    rng = np.random.default_rng(0)
    _, images = synthetic_objects(rng)
    texts, caption_image = synthetic_captions(rng, images)
    encode = hashing_encoder(DIM)
    vectors = encode(texts)
    captions = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)

    started = time.perf_counter()
    summary, rows = explained_model(captions, caption_image, texts, images)
    metrics_s = time.perf_counter() - started

    started = time.perf_counter()
    corpora = build_corpora(captions, caption_image, N_IMAGES)
    adversarial = adversarial_run(captions, caption_image, corpora, texts, encode, table=substitutes(texts))
    adversarial_s = time.perf_counter() - started

    print_figures(
        {
            "queries": summary["queries"],
            "failures": summary["failures"],
            "metrics_s": round(metrics_s, 2),
            "adversarial_s": round(adversarial_s, 2),
            "peak_rss_mib": peak_rss_mib(),
            "images": N_IMAGES,
            "dim": DIM,
            "objects": sum(len(objects) for objects in images.objects),
            "R@5": round(summary["R@5"], 2),
            "MRR@N": round(summary["MRR@N"], 4),
            "adversarial_changed": {kind: effects["queries"] for kind, effects in adversarial.items()},
            "adversarial_falls": {kind: effects["falls"] for kind, effects in adversarial.items()},
            "failure_rows": len(rows),
        }
    )


if __name__ == "__main__":
    main()
