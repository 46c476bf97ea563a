"""Import a CxC-sized split into PostgreSQL: 5,000 images, 25,000 captions, one 512-d
image space and two caption spaces (384-d, 512-d), all generated.

Prints the import's wall time and the process's peak memory as one JSON object on the
last line: {"seconds": ..., "peak_rss_mib": ...}. Data generation runs in a child
process first, so neither its time nor its memory is counted.

Environment: BENCH_IMAGES (5,000; 200 under BENCH_SMOKE=1), BENCH_DATABASE (cxc_bench_import).
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
import time
from pathlib import Path

from _common import env_database, fresh_database, peak_rss_mib, print_figures, setup_django, sized

N_IMAGES = sized("BENCH_IMAGES", 5_000, 200)
DATABASE = env_database("cxc_bench_import")
CAPTIONS_PER_IMAGE = 5
SPACES = (("effnet", "image", 512), ("minilm", "caption", 384), ("clip_text", "caption", 512))


def generate(folder: str) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    words = ["a", "man", "woman", "dog", "cat", "riding", "sitting", "on", "the", "beach", "street", "table", "red"]
    images, image_keys, caption_keys = [], [], []
    for i in range(N_IMAGES):
        cocoid = 100_000 + i
        filename = f"COCO_val2014_{cocoid:012d}.jpg"
        sentids = [500_000 + i * CAPTIONS_PER_IMAGE + j for j in range(CAPTIONS_PER_IMAGE)]
        sentences = []
        for s in sentids:
            tokens = list(rng.choice(words, size=int(rng.integers(6, 14))))
            sentences.append({"raw": " ".join(tokens).capitalize() + ".", "tokens": tokens, "sentid": s, "imgid": i})
            caption_keys.append(f"COCO_val2014:sentid:{s}")
        images.append(
            {
                "filepath": "val2014",
                "filename": filename,
                "imgid": i,
                "split": "val",
                "cocoid": cocoid,
                "sentids": sentids,
                "sentences": sentences,
            }
        )
        image_keys.append(filename)
    root = Path(folder)
    (root / "dataset_coco.json").write_text(json.dumps({"dataset": "coco", "images": images}))
    for name, modality, dim in SPACES:
        keys = image_keys if modality == "image" else caption_keys
        np.save(root / f"{name}.npy", rng.normal(size=(len(keys), dim)).astype(np.float32))
        (root / f"{name}.txt").write_text("".join(f"{k}\n" for k in keys))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        child = multiprocessing.get_context("spawn").Process(target=generate, args=(folder,))
        child.start()
        child.join()
        if child.exitcode != 0:
            raise SystemExit("data generation failed")
        setup_django(fresh_database(DATABASE), DATA_DIR=str(Path(folder) / "data"))
        from annotation.catalog.services import dataset_import_karpathy, embedding_space_import

        phases = {}
        start = time.perf_counter()
        summary = dataset_import_karpathy(
            path=Path(folder) / "dataset_coco.json", name="coco", image_url_prefix="https://images.example.org/"
        )
        phases["karpathy_s"] = round(time.perf_counter() - start, 2)
        for name, modality, _ in SPACES:
            t0 = time.perf_counter()
            embedding_space_import(
                dataset_name="coco",
                space_name=name,
                modality=modality,
                vectors_path=Path(folder) / f"{name}.npy",
                ids_path=Path(folder) / f"{name}.txt",
            )
            phases[f"{name}_s"] = round(time.perf_counter() - t0, 2)
        seconds = round(time.perf_counter() - start, 2)
    print(f"imported {summary.images} images, {summary.captions} captions, {len(SPACES)} spaces; phases {phases}")
    print_figures({"seconds": seconds, "peak_rss_mib": peak_rss_mib(), "images": N_IMAGES, **phases})


if __name__ == "__main__":
    main()
