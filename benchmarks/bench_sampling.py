"""Phase-1 sampling at CxC scale, end to end into PostgreSQL.

5,000 images with 5 captions each (25,000), generated clustered embeddings (see
bench_sampling_data.py): one image space and two caption spaces (two text models, as
CxC took the union over several). One batch runs i2i_csim and c2c_isim with k=5 and
c2c_cocaption with the released 25,000 budget, from creation until every pair and
rating slot is committed. Runs in its own fresh database ``bench_sampling``.

Prints one JSON object on its last line: {"total_s", "search_s", "pairs": {method: n}, ...}.
Environment: BENCH_IMAGES (5,000; 200 under BENCH_SMOKE=1; the c2c_cocaption budget is five
per image), BENCH_DIM (256), BENCH_DATABASE (bench_sampling).
"""

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import env_database, env_number, fresh_database, print_figures, setup_django, sized

DB_NAME = env_database("bench_sampling")
N_IMAGES = sized("BENCH_IMAGES", 5_000, 200)
CAPTIONS_PER_IMAGE = 5
DIM = env_number("BENCH_DIM", 256)
SEED = 0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> None:
    setup_django(fresh_database(DB_NAME))
    from bench_sampling_data import caption_vectors, clustered_vectors

    from annotation.catalog.services import embedding_space_import
    from annotation.models import Caption, Dataset, Image, Split
    from sampling.runs.batch import sampling_batch_run
    from sampling.services import sampling_batch_create

    rng = np.random.default_rng(SEED)
    images_vectors = clustered_vectors(N_IMAGES, DIM, max(8, N_IMAGES // 400), rng)
    text_spaces = [caption_vectors(images_vectors, CAPTIONS_PER_IMAGE, rng)[0] for _ in range(2)]

    dataset = Dataset.objects.create(name="bench", image_url_prefix="https://images.example.org/")
    split = Split.objects.create(dataset=dataset, name="val")
    images = Image.objects.bulk_create(
        [
            Image(dataset=dataset, split=split, key=f"COCO_val2014_{i:012d}.jpg", file_path=f"val2014/{i}.jpg")
            for i in range(N_IMAGES)
        ]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                image=images[row // CAPTIONS_PER_IMAGE],
                key=f"COCO_val2014:sentid:{row}",
                sentid=row,
                text=f"caption {row}",
            )
            for row in range(N_IMAGES * CAPTIONS_PER_IMAGE)
        ],
        batch_size=5_000,
    )
    folder = Path(os.environ["DATA_DIR"]) / "inputs"
    folder.mkdir()
    for name, modality, vectors, items in (
        ("image", "image", images_vectors, images),
        ("text-a", "caption", text_spaces[0], captions),
        ("text-b", "caption", text_spaces[1], captions),
    ):
        np.save(folder / f"{name}.npy", vectors)
        (folder / f"{name}.txt").write_text("".join(f"{item.key}\n" for item in items), encoding="utf-8")
        embedding_space_import(
            dataset_name="bench",
            space_name=name,
            modality=modality,
            vectors_path=folder / f"{name}.npy",
            ids_path=folder / f"{name}.txt",
        )
    log(f"loaded {N_IMAGES} images, {len(captions)} captions and 3 spaces of {DIM} dims")

    started = time.perf_counter()
    batch = sampling_batch_create(
        dataset_name="bench",
        split_name="val",
        methods={"i2i_csim": None, "c2c_isim": None, "c2c_cocaption": CAPTIONS_PER_IMAGE * N_IMAGES},
        k=5,
        seed=SEED,
    )
    batch = sampling_batch_run(batch_id=batch.pk, echo=lambda done, total, message: log(f"{done}/{total} {message}"))
    total_s = time.perf_counter() - started
    if batch.status != "succeeded":
        sys.exit(f"the batch failed: {batch.error}")
    stats = batch.stats
    print_figures(
        {
            "total_s": round(total_s, 2),
            "search_s": stats["search_s"],
            "pairs": batch.pairs_per_method,
            "total_over_search": round(total_s / stats["search_s"], 1) if stats["search_s"] else None,
            "load_s": stats["load_s"],
            "select_s": stats["select_s"],
            "write_s": stats["write_s"],
            "rating_slots": sum(batch.pairs_per_method.values()) * batch.ratings_per_pair,
            "index": stats["index"],
            "images": N_IMAGES,
            "captions": len(captions),
            "dim": DIM,
        }
    )


if __name__ == "__main__":
    os.environ["DATA_DIR"] = tempfile.mkdtemp(prefix="bench-sampling-")
    try:
        main()
    finally:
        # The stored embedding files; the database stays for a look afterwards.
        shutil.rmtree(os.environ["DATA_DIR"], ignore_errors=True)
