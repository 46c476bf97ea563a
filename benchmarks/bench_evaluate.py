"""Evaluate three models at CxC scale with every protocol: 5,000 images, 25,000 captions,
512-d joint spaces, ratings generated in the CxC release's shape and counts (44,009 STS,
42,767 SIS, 44,722 SITS rows), and an audit of the first model rated in the database.

Runs ``manage.py evaluate --model ... --model ... --model ... --audited`` as a child
process: COCO 5K and COCO 1K, CxC-extended and audited positives for the four retrieval
tasks (R@1/5/10, median rank, R-Precision, mAP@R, bootstrap intervals), the three
bootstrap correlations (1,000 samples each), global calibration and the own top-10
precision, for each model, and the comparison table. Prints its wall time and the
child's peak memory as one JSON object on the last line: {"seconds", "peak_rss_mib", ...}.
Generating the data, importing the split into a fresh PostgreSQL database, running the
audit batch (model_topk, 500 queries per direction, k=10) and storing five ratings per
audited pair happen before, in another child process, and are not counted. The
machine's other load makes the time noisy; the figure includes the command's start-up
and database reads.

Environment (under BENCH_SMOKE=1 in brackets): BENCH_IMAGES 5,000 [1,000, the least COCO
1K takes; topics and rated rows scale with it], BENCH_DIM 512 [64], BENCH_AUDIT_QUERIES
500 [20], BENCH_SAMPLES 1,000 [50] (bootstrap samples), BENCH_DATABASE cxc_bench_evaluate.
"""

from __future__ import annotations

import csv
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO_DIR, env_database, fresh_database, print_figures, setup_django, sized

DATABASE = env_database("cxc_bench_evaluate")
CXC_IMAGES = 5_000
N_IMAGES = sized("BENCH_IMAGES", CXC_IMAGES, 1_000)
SCALE = N_IMAGES / CXC_IMAGES
CAPTIONS_PER_IMAGE = 5
DIM = sized("BENCH_DIM", 512, 64)
N_TOPICS = max(1, round(400 * SCALE))
# Row counts of the public CxC validation split (at 5,000 images).
N_STS_ISIM = round(19_009 * SCALE)
N_SIS = round(42_767 * SCALE)
N_SITS_INTRASIM = round(19_722 * SCALE)
# The models: the true vectors plus noise of these levels (the first is the best).
MODEL_NOISE = {"model-a": (0.8, 1.2), "model-b": (1.0, 1.6), "model-c": (1.4, 2.2)}
AUDIT_QUERIES = sized("BENCH_AUDIT_QUERIES", 500, 20)
AUDIT_K = 10
SAMPLES = sized("BENCH_SAMPLES", 1_000, 50)


def generate(folder: Path) -> dict:
    """Write dataset_coco.json, the model's vectors and ids, and ratings/{sts,sis,sits}_val.csv.

    Latent "true" vectors: images gather around topics, captions around their image.
    Human scores are a noisy increasing function of the true cosine; the model's vectors
    are the true ones plus noise, so every figure is non-trivial.
    """
    import numpy as np

    rng = np.random.default_rng(0)

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    def noisy(base, low, high):
        # Each row gets its own noise level, so similarities spread over a wide range.
        scale = rng.uniform(low, high, size=(base.shape[0], 1))
        return unit(base + scale * unit(rng.normal(size=base.shape)))

    topics = unit(rng.normal(size=(N_TOPICS, DIM)))
    image_topic = rng.integers(0, N_TOPICS, N_IMAGES)
    true_images = noisy(topics[image_topic], 0.3, 1.5)
    caption_image = np.repeat(np.arange(N_IMAGES), CAPTIONS_PER_IMAGE)
    n_captions = caption_image.size
    true_captions = noisy(true_images[caption_image], 0.5, 1.5)
    np.save(folder / "true_images.npy", true_images.astype(np.float32))
    np.save(folder / "true_captions.npy", true_captions.astype(np.float32))

    image_keys = [f"COCO_val2014_{100_000 + i:012d}.jpg" for i in range(N_IMAGES)]
    caption_keys = [f"COCO_val2014:sentid:{500_000 + c}" for c in range(n_captions)]
    _write_karpathy(folder / "dataset_coco.json", image_keys)
    for name, (low, high) in MODEL_NOISE.items():
        np.save(folder / f"{name}-images.npy", noisy(true_images, low, high).astype(np.float32))
        np.save(folder / f"{name}-captions.npy", noisy(true_captions, low, high).astype(np.float32))
    (folder / "images.txt").write_text("".join(f"{k}\n" for k in image_keys))
    (folder / "captions.txt").write_text("".join(f"{k}\n" for k in caption_keys))

    truth = {"images": true_images, "captions": true_captions, "image_topic": image_topic}
    return _write_ratings(folder / "ratings", rng, truth, image_keys, caption_keys)


def _write_karpathy(path: Path, image_keys: list[str]) -> None:
    images = []
    for i, key in enumerate(image_keys):
        sentids = [500_000 + i * CAPTIONS_PER_IMAGE + j for j in range(CAPTIONS_PER_IMAGE)]
        images.append(
            {
                "filepath": "val2014",
                "filename": key,
                "split": "val",
                "cocoid": 100_000 + i,
                "sentids": sentids,
                "sentences": [{"raw": f"Caption {s} of image {i}.", "sentid": s} for s in sentids],
            }
        )
    path.write_text(json.dumps({"dataset": "coco", "images": images}))


def _write_ratings(ratings: Path, rng, truth: dict, image_keys: list[str], caption_keys: list[str]) -> dict:
    """ratings/{sts,sis,sits}_val.csv in the CxC release's shape and counts; returns the
    rows per kind. Human scores are a noisy increasing function of the true cosine."""
    import numpy as np

    true_images, true_captions, image_topic = truth["images"], truth["captions"], truth["image_topic"]
    n_captions = len(caption_keys)
    caption_image = np.repeat(np.arange(N_IMAGES), CAPTIONS_PER_IMAGE)
    by_topic = [np.flatnonzero(image_topic == t) for t in range(N_TOPICS)]

    def same_topic_images(n):
        """n pairs of distinct images of one topic."""
        first = rng.integers(0, N_IMAGES, 2 * n)
        second = np.array([rng.choice(by_topic[image_topic[i]]) for i in first])
        keep = np.flatnonzero(first != second)[:n]
        return first[keep], second[keep]

    def human(a, b):
        cos = np.einsum("ij,ij->i", a, b)
        low, high = np.quantile(cos, [0.1, 0.9])
        score = 5 * (cos - low) / (high - low) + rng.normal(scale=0.7, size=cos.size)
        return np.round(np.clip(score, 0, 5), 2)

    ratings.mkdir()
    # STS: the co-caption pairs (five per image) and caption pairs through similar images.
    first_caption = np.arange(N_IMAGES)[:, None] * CAPTIONS_PER_IMAGE
    group = np.arange(CAPTIONS_PER_IMAGE)
    co_a = (first_caption + group).ravel()
    co_b = (first_caption + (group + 1) % CAPTIONS_PER_IMAGE).ravel()
    img_a, img_b = same_topic_images(N_STS_ISIM)
    is_a = img_a * CAPTIONS_PER_IMAGE + rng.integers(0, CAPTIONS_PER_IMAGE, img_a.size)
    is_b = img_b * CAPTIONS_PER_IMAGE + rng.integers(0, CAPTIONS_PER_IMAGE, img_b.size)
    sts_a, sts_b = np.concatenate([co_a, is_a]), np.concatenate([co_b, is_b])
    methods = ["c2c_cocaption"] * co_a.size + ["c2c_isim"] * is_a.size
    _write(
        ratings / "sts_val.csv",
        ("caption1", "caption2"),
        [caption_keys[i] for i in sts_a],
        [caption_keys[i] for i in sts_b],
        human(true_captions[sts_a], true_captions[sts_b]),
        methods,
    )
    # SIS: image pairs, mostly within a topic.
    sis_a, sis_b = same_topic_images(N_SIS)
    _write(
        ratings / "sis_val.csv",
        ("image1", "image2"),
        [image_keys[i] for i in sis_a],
        [image_keys[i] for i in sis_b],
        human(true_images[sis_a], true_images[sis_b]),
        ["i2i_csim"] * sis_a.size,
    )
    # SITS: every original pair, then captions paired with another image of their topic.
    in_a, in_b = same_topic_images(N_SITS_INTRASIM)
    in_caption = in_b * CAPTIONS_PER_IMAGE + rng.integers(0, CAPTIONS_PER_IMAGE, N_SITS_INTRASIM)
    sits_c = np.concatenate([np.arange(n_captions), in_caption])
    sits_i = np.concatenate([caption_image, in_a])
    _write(
        ratings / "sits_val.csv",
        ("caption", "image"),
        [caption_keys[i] for i in sits_c],
        [image_keys[i] for i in sits_i],
        human(true_captions[sits_c], true_images[sits_i]),
        ["c2i_original"] * n_captions + ["c2i_intrasim"] * N_SITS_INTRASIM,
    )
    return {"STS": int(sts_a.size), "SIS": int(sis_a.size), "SITS": int(sits_c.size)}


def _write(path: Path, names: tuple[str, str], first, second, scores, methods) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*names, "agg_score", "sampling_method"])
        writer.writerows(zip(first, second, (f"{s:.2f}" for s in scores), methods, strict=True))


def prepare(folder: str, database_url: str) -> None:
    """Generate the data, import the split and model-a's spaces, run an audit of model-a
    and rate it; runs in a child process so that neither its time nor its memory is
    counted."""
    folder = Path(folder)
    rows = generate(folder)
    setup_django(database_url, DATA_DIR=str(folder / "data"))
    from annotation.catalog.services import dataset_import_karpathy, embedding_space_import

    dataset_import_karpathy(
        path=folder / "dataset_coco.json", name="coco", image_url_prefix="https://images.example.org/"
    )
    for modality in ("image", "caption"):
        embedding_space_import(
            dataset_name="coco",
            space_name=f"model-a-{modality}",
            modality=modality,
            vectors_path=folder / f"model-a-{modality}s.npy",
            ids_path=folder / f"{modality}s.txt",
        )
    rows["audited_pairs"] = audit_and_rate(folder)
    (folder / "rows.json").write_text(json.dumps(rows))


def audit_and_rate(folder: Path) -> int:
    """Audit model-a (every direction, AUDIT_QUERIES queries each, top AUDIT_K) and store
    five ratings per audited pair, scored like the generated human ratings."""
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from annotation.models import Pair, Rating, RatingSlot
    from sampling.runs.batch import sampling_batch_run
    from sampling.selectors import split_items
    from sampling.services import sampling_batch_create

    audit = {
        "models": [{"name": "model-a", "image_space": "model-a-image", "caption_space": "model-a-caption"}],
        "queries": AUDIT_QUERIES,
    }
    batch = sampling_batch_create(
        dataset_name="coco", split_name="val", methods={"model_topk": None}, k=AUDIT_K, audit=audit
    )
    batch = sampling_batch_run(batch_id=batch.pk)
    if batch.status != "succeeded":
        raise SystemExit(f"audit batch failed: {batch.error}")
    items = split_items(split=batch.split)
    image_row = {int(i): r for r, i in enumerate(items.image_ids)}
    caption_row = {int(c): r for r, c in enumerate(items.caption_ids)}
    truth = {"image": np.load(folder / "true_images.npy"), "caption": np.load(folder / "true_captions.npy")}
    pairs = list(
        Pair.objects.filter(batch=batch).values_list("id", "kind", "caption_a", "caption_b", "image_a", "image_b")
    )

    def vector(modality, item_id):
        rows = caption_row if modality == "caption" else image_row
        return truth[modality][rows[item_id]]

    cosines = np.empty(len(pairs))
    for n, (_, kind, ca, cb, ia, ib) in enumerate(pairs):
        if kind == "SITS":
            cosines[n] = vector("caption", ca) @ vector("image", ia)
        elif kind == "STS":
            cosines[n] = vector("caption", ca) @ vector("caption", cb)
        else:
            cosines[n] = vector("image", ia) @ vector("image", ib)
    rng = np.random.default_rng(7)
    low, high = np.quantile(cosines, [0.1, 0.9])
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"bench-rater-{n}", password="!") for n in range(batch.ratings_per_pair)]
    )
    with transaction.atomic():
        slots = RatingSlot.objects.filter(pair__batch=batch).values_list("id", "pair_id", "index")
        pair_index = {pair_id: n for n, (pair_id, *_) in enumerate(pairs)}
        ratings = []
        for slot_id, pair_id, index in slots:
            score = 5 * (cosines[pair_index[pair_id]] - low) / (high - low) + rng.normal(scale=0.7)
            ratings.append(
                Rating(
                    pair_id=pair_id,
                    slot_id=slot_id,
                    rater=users[index],
                    score=round(float(np.clip(score, 0, 5)), 2),
                    time_on_item_ms=4000,
                    idempotency_key=f"bench-{slot_id}",
                )
            )
        with connection.cursor() as cursor:
            slot_table, pair_table = RatingSlot._meta.db_table, Pair._meta.db_table
            for index, user in enumerate(users):
                cursor.execute(
                    f"UPDATE {slot_table} SET state = 'done', rater_id = %s, pair_done = %s, pair_complete = true "
                    f"WHERE index = %s AND pair_id IN (SELECT id FROM {pair_table} WHERE batch_id = %s)",
                    [user.pk, batch.ratings_per_pair, index, batch.pk],
                )
        Rating.objects.bulk_create(ratings, batch_size=5000)
        Pair.objects.filter(batch=batch).update(ratings_done=batch.ratings_per_pair)
    return len(pairs)


def main() -> None:
    database_url = fresh_database(DATABASE)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        child = multiprocessing.get_context("spawn").Process(target=prepare, args=(tmp, database_url))
        child.start()
        child.join()
        if child.exitcode != 0:
            raise SystemExit("data generation or import failed")
        rows = json.loads((folder / "rows.json").read_text())
        out = folder / "report.json"
        command = [sys.executable, str(REPO_DIR / "manage.py"), "evaluate", "--ratings", str(folder / "ratings")]
        command += ["--dataset", "coco", "--split", "val", "--audited", "--out", str(out)]
        command += ["--csv", str(folder / "comparison.csv"), "--samples", str(SAMPLES)]
        # model-a from its stored spaces, the others from files.
        command += ["--model", "model-a:image-space=model-a-image,caption-space=model-a-caption"]
        for name in list(MODEL_NOISE)[1:]:
            spec = f"image-vectors={folder / f'{name}-images.npy'},image-ids={folder / 'images.txt'},"
            spec += f"caption-vectors={folder / f'{name}-captions.npy'},caption-ids={folder / 'captions.txt'}"
            command += ["--model", f"{name}:{spec}"]
        env = {**os.environ, "DATABASE_URL": database_url, "RUN_MODE": "services", "DATA_DIR": str(folder / "data")}
        with (folder / "stdout.txt").open("w") as stdout, (folder / "stderr.txt").open("w") as stderr:
            start = time.perf_counter()
            process = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr)
            # wait4 gives this child's own peak memory. (A child's peak starts from its
            # parent's at exec, which is why the data were made in another child.)
            _, status, usage = os.wait4(process.pid, 0)
            seconds = round(time.perf_counter() - start, 2)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            sys.stderr.write((folder / "stderr.txt").read_text())
            raise SystemExit(f"evaluate failed with exit code {process.returncode}")
        # Linux reports KiB.
        peak = round(usage.ru_maxrss / 1024, 1)
        report = json.loads(out.read_text())
        print((folder / "stdout.txt").read_text())
    models = report["models"]
    first = models["model-a"]
    figures = {
        "seconds": seconds,
        "peak_rss_mib": peak,
        "models": len(models),
        "images": N_IMAGES,
        "captions": N_IMAGES * CAPTIONS_PER_IMAGE,
        "dim": DIM,
        "rated_rows": {k: v for k, v in rows.items() if k != "audited_pairs"},
        "audited_pairs": rows["audited_pairs"],
        "sections": sorted(k for k in ("retrieval", "coco_1k", "correlation", "calibration", "own_top_k") if first[k]),
        "retrieval_sets": {task: sorted(sets) for task, sets in first["retrieval"].items()},
        "skipped": sorted(first["skipped"]),
        "comparison_rows": len(report["comparison"]),
        "i2t_cxc_r1": {name: round(m["retrieval"]["image_to_text"]["cxc"]["R@1"], 2) for name, m in models.items()},
        "i2t_coco1k_r1": {name: round(m["coco_1k"]["image_to_text"]["R@1"], 2) for name, m in models.items()},
        "t2i_audited_map_at_r": {
            name: round(m["retrieval"]["text_to_image"]["audited"]["mAP@R"], 2) for name, m in models.items()
        },
        "own_top10_t2i": {
            name: {key: m["own_top_k"]["text_to_image"][key] for key in ("P@10", "queries_fully_judged", "unrated")}
            for name, m in models.items()
        },
        "sts_spearman": round(first["correlation"]["STS"]["mean"], 2),
        "cpu_count": os.cpu_count(),
    }
    print_figures(figures)


if __name__ == "__main__":
    main()
