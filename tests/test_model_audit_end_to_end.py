"""Models in the loop, end to end on the bundled demo dataset: an admin audits a model through
the API (sampling method model_topk), five scripted raters rate the audit batch through the
rating API, and `manage.py evaluate --audited` scores the model with the audited positives.
The figures are checked against an independent count from the stored ratings."""

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.management.commands.load_demo import DEMO_DIR
from annotation.models import Caption, Image, Pair, Rating
from frontend.models import WorkedExample
from sampling.models import AuditRetrieval
from tests.factories import UserFactory
from tests.support.queue_support import submit_kwargs
from tests.support.rating_support import db_id

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

K = 3
MODEL = "demo:image-space=efficientnet_lite0,caption-space=minilm,spaces=unimodal"


def demo_vectors(space: str) -> dict[str, np.ndarray]:
    vectors = np.load(DEMO_DIR / "embeddings" / f"{space}.npy")
    keys = (DEMO_DIR / "embeddings" / f"{space}.ids.txt").read_text().split()
    return {key: vectors[row] for row, key in enumerate(keys)}


def human_score(pair: Pair, rng: np.random.Generator, captions: dict, images: dict) -> float:
    """A scripted rater: captions of one image are alike; otherwise the encoders' cosine,
    spread over the scale, with some noise of the rater's own."""
    if pair.kind == "SITS":
        base = 4.5 if pair.caption_a.image_id == pair.image_a_id else 0.8
    elif pair.kind == "STS":
        if pair.caption_a.image_id == pair.caption_b.image_id:
            base = 4.3
        else:
            base = 6.0 * float(captions[pair.caption_a.key] @ captions[pair.caption_b.key]) - 0.5
    else:
        # Spread the demo's image cosines over the scale (10th percentile 0, 90th 5).
        matrix = np.stack(list(images.values()))
        cosines = (matrix @ matrix.T)[np.triu_indices(len(matrix), 1)]
        low, high = np.quantile(cosines, [0.1, 0.9])
        base = 5.0 * (float(images[pair.image_a.key] @ images[pair.image_b.key]) - low) / (high - low)
    return float(np.clip(base + rng.normal(scale=0.3), 0.0, 5.0))


def rate_everything(raters: int = 5) -> None:
    """Each scripted rater claims and rates until the queue is empty for them: the audit
    batch first (its priority), then the demo's first batch, whose pairs a model's top-k
    also reaches (captions of one image, near images)."""
    captions, images = demo_vectors("minilm"), demo_vectors("efficientnet_lite0")
    for number in range(raters):
        client = APIClient()
        client.force_authenticate(UserFactory(roles=["rater"], qualified_for=["STS", "SIS", "SITS"]))
        rng = np.random.default_rng(number)
        while True:
            claim = client.post("/api/rate/demo/claim/", {}, format="json")
            if claim.status_code == 204:
                break
            assignment = claim.json()
            pair = Pair.objects.select_related("caption_a", "caption_b", "image_a", "image_b").get(
                pk=db_id("pair", assignment["pair_id"])
            )
            score = round(human_score(pair, rng, captions, images), 2)
            answer = client.post(
                f"/api/rate/demo/slots/{assignment['slot_id']}/submit/",
                submit_kwargs(f"r{number}-{pair.pk}", score),
                format="json",
            )
            assert answer.status_code == 201, answer.content


def own_top_k_by_hand(space: str, keys: list[str], means: dict[frozenset, float], threshold: float):
    """Per query with every top-K item rated: the share of positives (mean >= threshold)."""
    vectors = demo_vectors(space)
    matrix = np.stack([vectors[key] for key in keys])
    scores = matrix @ matrix.T
    np.fill_diagonal(scores, -np.inf)
    shares, unrated = [], 0
    for query, row in enumerate(scores):
        top = np.argsort(-row, kind="stable")[:K]
        found = [means.get(frozenset((keys[query], keys[t]))) for t in top]
        unrated += sum(value is None for value in found)
        if all(value is not None for value in found):
            shares.append(100.0 * sum(value >= threshold for value in found) / K)
    return float(np.mean(shares)), len(shares), unrated


def worked_examples_in_top_k(caption_keys: list[str]) -> int:
    """Every queued pair is rated, so an unrated top-k item is a worked example's pair:
    raters see those solved, so they are never queued. How many top-K items they are."""
    examples = {
        frozenset(pair)
        for pair in WorkedExample.objects.filter(dataset__name="demo", kind="STS").values_list(
            "caption_a__key", "caption_b__key"
        )
    }
    captions = demo_vectors("minilm")
    matrix = np.stack([captions[key] for key in caption_keys])
    scores = matrix @ matrix.T
    np.fill_diagonal(scores, -np.inf)
    return sum(
        frozenset((caption_keys[q], caption_keys[t])) in examples
        for q in range(len(caption_keys))
        for t in np.argsort(-scores[q], kind="stable")[:K]
    )


def assert_evaluate_before_rating(out) -> None:
    """Right after the audit nothing is rated: the figures say so instead of failing."""
    options = {"dataset": "demo", "split": "demo", "audited": True, "model": [MODEL], "top_k": K}
    call_command("evaluate", out=str(out), stdout=io.StringIO(), **options)
    report = json.loads(out.read_text())["models"]["demo"]
    top = report["own_top_k"]["text_to_text"]
    assert top["judged"] == 0 and top["unrated"] == top["retrieved"] == 60 * K and top[f"P@{K}"] is None
    assert report["skipped"]["text_to_text.audited"] == "no fully rated STS pair of split 'demo' in the dataset yet"


def assert_the_export_carries_the_audit(folder) -> None:
    """The export names the audit: its pairs' method per direction, the batch's models."""
    call_command("export_dataset", "--dataset", "demo", "--out", str(folder), stdout=io.StringIO())
    sts_rows = (folder / "sts_demo.csv").read_text().splitlines()
    assert any(line.endswith(",topk_c2c") for line in sts_rows)
    manifest = json.loads((folder / "manifest.json").read_text())
    (audit_entry,) = [entry for entry in manifest["batches"] if entry["audit"]]
    assert audit_entry["audit"]["models"] == [
        {"name": "demo", "image_space": "efficientnet_lite0", "caption_space": "minilm"}
    ]


def test_audit_a_model_rate_it_and_evaluate_it_with_the_audited_positives(settings, admin_api, tmp_path):
    settings.RUN_MODE = "embedded"
    call_command("load_demo", stdout=io.StringIO())
    response = admin_api.post(
        "/api/sampling/batches/",
        {
            "dataset": "demo",
            "split": "demo",
            "methods": {"model_topk": None},
            "k": K,
            "priority": 10,
            "audit": {
                "models": [{"name": "demo", "image_space": "efficientnet_lite0", "caption_space": "minilm"}],
            },
            "start": False,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["audit"]["directions"] == ["c2c", "i2i"]  # unimodal spaces: intramodal only
    from sampling.runs.batch import sampling_batch_run

    batch = sampling_batch_run(batch_id=response.json()["id"])
    assert batch.status == "succeeded", batch.error
    audited = Pair.objects.filter(batch=batch)
    assert audited.filter(kind="STS").exists() and audited.filter(kind="SIS").exists()
    recorded = set(AuditRetrieval.objects.filter(batch=batch).values_list("pair", flat=True))
    # Every audited pair, and pairs of the demo's first batch the model also retrieved.
    assert set(audited.values_list("id", flat=True)) < recorded

    assert_evaluate_before_rating(tmp_path / "before.json")
    rate_everything()
    assert all(pair.ratings_done == 5 for pair in Pair.objects.filter(dataset__name="demo"))
    means = {}
    for pair in Pair.objects.filter(dataset__name="demo", kind__in=["STS", "SIS"]).select_related(
        "caption_a", "caption_b", "image_a", "image_b"
    ):
        scores = Rating.objects.filter(pair=pair).values_list("score", flat=True)
        items = (pair.caption_a.key, pair.caption_b.key) if pair.kind == "STS" else (pair.image_a.key, pair.image_b.key)
        means[frozenset(items)] = float(np.mean(list(scores)))

    out = tmp_path / "audit.json"
    text = io.StringIO()
    call_command(
        "evaluate",
        dataset="demo",
        split="demo",
        audited=True,
        model=[MODEL],
        top_k=K,
        samples=200,
        out=str(out),
        stdout=text,
    )
    report = json.loads(out.read_text())["models"]["demo"]
    caption_keys = list(Caption.objects.filter(image__split__name="demo").order_by("id").values_list("key", flat=True))
    image_keys = list(Image.objects.filter(split__name="demo").order_by("id").values_list("key", flat=True))
    for task, space, keys, kind, threshold in (
        ("text_to_text", "minilm", caption_keys, "STS", 3.0),
        ("image_to_image", "efficientnet_lite0", image_keys, "SIS", 2.5),
    ):
        kind_means = {pair: mean for pair, mean in means.items() if next(iter(pair)) in keys}
        expected, complete, unrated = own_top_k_by_hand(space, keys, kind_means, threshold)
        assert task in report["own_top_k"], report["skipped"]
        top = report["own_top_k"][task]
        assert top["judged_by"] == ["audited"] and top["k"] == K
        assert top["queries_fully_judged"] == complete and top["unrated"] == unrated
        assert top[f"P@{K}"] == pytest.approx(expected)
        positives = sum(mean >= threshold for mean in kind_means.values())
        assert report["retrieval"][task]["audited"]["positives"] == positives
        assert report["calibration"]["audited"][kind]["pairs"] == len(kind_means)
        assert report["calibration"]["audited"][kind]["positives"] == positives
    # The scripted raters follow the encoders' cosines, so the model agrees with them.
    assert report["calibration"]["audited"]["STS"]["spearman"] > 20
    assert report["audited_ratings"]["STS"]["rows"] == Pair.objects.filter(dataset__name="demo", kind="STS").count()
    assert report["own_top_k"]["text_to_text"]["unrated"] == worked_examples_in_top_k(caption_keys)
    assert_the_export_carries_the_audit(tmp_path / "export")
    assert "== model demo" in text.getvalue()
    # The paper-shaped table has a row for the audited positives.
    assert any(line.startswith("audited ") for line in text.getvalue().splitlines())
