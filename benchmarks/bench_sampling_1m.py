"""Sampling core at 1,000,000 images (no database): approximate search, seconds, memory, recall.

Generated clustered 256-d embeddings (see bench_sampling_data.py): one image space and
one caption space with five captions per image. Runs i2i_csim, c2c_isim and
c2c_cocaption over the whole set as the batch runner does, then measures recall@5 of
the approximate neighbours against exact search for 2,000 sampled images in each
space. Prints one JSON object on its last line:
{"seconds", "peak_rss_mib", "recall_at_5", ...}; recall_at_5 is the lower of the two
spaces. Environment: BENCH_IMAGES (1,000,000; 30,000 under BENCH_SMOKE=1, still above
the exact-search limit of 20,000, so the approximate index runs), BENCH_DIM (256),
BENCH_QUERIES (2,000; 200 under BENCH_SMOKE=1).
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import env_number, peak_rss_mib, print_figures, sized
from bench_sampling_data import caption_vectors, clustered_vectors

from sampling.methods.strategies import CaptionGroups, SplitArrays, mean_caption_vectors, sample_split
from sampling.search.index import IndexConfig, exact_neighbours, recall_at_k

N_IMAGES = sized("BENCH_IMAGES", 1_000_000, 30_000)
DIM = env_number("BENCH_DIM", 256)
CAPTIONS_PER_IMAGE = 5
K = 5
QUERIES = min(N_IMAGES, sized("BENCH_QUERIES", 2_000, 200))
SEED = 0

STARTED = time.perf_counter()


def log(message: str) -> None:
    print(f"{time.perf_counter() - STARTED:7.1f} s  {message}", file=sys.stderr, flush=True)


def main() -> None:
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    images = clustered_vectors(N_IMAGES, DIM, max(8, N_IMAGES // 400), rng)
    captions, caption_image = caption_vectors(images, CAPTIONS_PER_IMAGE, rng)
    generate_s = time.perf_counter() - started
    log(f"generated {N_IMAGES} images and {len(captions)} captions of {DIM} dims in {generate_s:.1f} s")

    index = IndexConfig(kind="auto")
    data = SplitArrays(
        n_images=N_IMAGES,
        caption_image=caption_image,
        image_spaces={"image": images},
        caption_spaces={"text": captions},
    )
    methods = {"i2i_csim": None, "c2c_isim": None, "c2c_cocaption": 5 * N_IMAGES}
    started = time.perf_counter()
    result = sample_split(data, methods, k=K, seed=SEED, index=index, step=log)
    seconds = time.perf_counter() - started
    log(f"sampled in {seconds:.1f} s, {result.search_seconds:.1f} s of it searching")

    queries = np.sort(rng.choice(N_IMAGES, size=QUERIES, replace=False))
    recalls = {}
    mean_vectors = mean_caption_vectors(captions, CaptionGroups.build(caption_image, N_IMAGES))
    for name, vectors in (("image", images), ("text", mean_vectors)):
        truth = exact_neighbours(vectors, queries, K)
        recalls[name] = recall_at_k(result.neighbours[name][queries], truth)
        log(f"recall@5 in space {name}: {recalls[name]:.4f}")
    print_figures(
        {
            "seconds": round(seconds, 1),
            "peak_rss_mib": round(peak_rss_mib()),
            "recall_at_5": round(min(recalls.values()), 4),
            "recall_at_5_by_space": {name: round(value, 4) for name, value in recalls.items()},
            "search_s": round(result.search_seconds, 1),
            "generate_s": round(generate_s, 1),
            "images": N_IMAGES,
            "captions": len(captions),
            "dim": DIM,
            "index": {name: kind for name, kind in result.index_kinds.items()},
            "index_config": index.as_dict(),
            "pairs": {method: len(pairs) for method, pairs in result.pairs.items()},
        }
    )


if __name__ == "__main__":
    main()
