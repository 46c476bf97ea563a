"""Audit batches (sampling method model_topk) in the database: created through the service and
the API, run, their pairs query first, the retrievals behind every pair recorded, pooled
models, queued pairs left out; bad audit configurations named with nothing stored."""

import numpy as np
import pytest

from annotation.models import Pair
from sampling.errors import SamplingInputError
from sampling.models import AuditRetrieval, SamplingBatch
from sampling.runs.batch import sampling_batch_run
from sampling.services import sampling_batch_create
from tests.sampling.conftest import random_unit

pytestmark = pytest.mark.django_db

CLIP = {"name": "clip", "image_space": "clip-img", "caption_space": "clip-txt"}
OTHER = {"name": "other", "image_space": "other-img", "caption_space": "other-txt"}
RNG = np.random.default_rng(5)
IMAGES = random_unit(RNG, 12, 8)
CAPTIONS = IMAGES.repeat(2, axis=0) + 0.3 * random_unit(RNG, 24, 8)
CAPTIONS /= np.linalg.norm(CAPTIONS, axis=1, keepdims=True)


@pytest.fixture
def joint(make_split):
    """12 images, 2 captions each, two joint models: clip (captions near their image) and other."""
    rng = np.random.default_rng(6)
    return make_split(
        n_images=12,
        captions_per_image=2,
        image_spaces={"clip-img": IMAGES, "other-img": random_unit(rng, 12, 8), "small-img": random_unit(rng, 12, 4)},
        caption_spaces={"clip-txt": CAPTIONS, "other-txt": random_unit(rng, 24, 8)},
    )


def create(built, audit, *, budget=None, k=2, methods=None, seed=0):
    return sampling_batch_create(
        dataset_name=built.dataset.name,
        split_name=built.split.name,
        methods=methods or {"model_topk": budget},
        k=k,
        audit=audit,
        seed=seed,
    )


def run(batch):
    batch = sampling_batch_run(batch_id=batch.pk)
    assert batch.status == "succeeded", batch.error
    return batch


def test_an_audit_queues_each_query_s_top_k_and_records_the_model(joint):
    batch = run(create(joint, {"models": [CLIP], "directions": ["c2i"]}, k=2))
    pairs = Pair.objects.filter(batch=batch)
    # 24 captions x top 2 images, all fresh: 48 SITS pairs named topk_c2i.
    assert pairs.count() == 48 and set(pairs.values_list("sampling_method", flat=True)) == {"topk_c2i"}
    assert batch.pairs_per_method == {"topk_c2i": 48}
    assert batch.audit == {"models": [CLIP], "directions": ["c2i"], "queries": None}
    assert batch.stats["audit_retrievals"] == 48
    retrievals = AuditRetrieval.objects.filter(batch=batch).select_related("pair__caption_a", "pair__image_a")
    assert {r.model_name for r in retrievals} == {"clip"} and {r.direction for r in retrievals} == {"c2i"}
    best = {}
    for r in retrievals:
        if r.rank == 1:
            best[joint.captions.index(r.pair.caption_a)] = joint.images.index(r.pair.image_a)
    assert best == {c: int(np.argmax(IMAGES @ CAPTIONS[c])) for c in range(24)}


def test_image_queries_and_intramodal_pairs_keep_the_query_first(joint):
    batch = run(create(joint, {"models": [CLIP], "directions": ["i2i", "c2c"], "queries": 5}, k=1))
    pairs = list(Pair.objects.filter(batch=batch).select_related("image_a", "image_b", "caption_a", "caption_b"))
    assert {p.sampling_method for p in pairs} <= {"topk_i2i", "topk_c2c"}
    records = AuditRetrieval.objects.filter(batch=batch)
    # Five queries each; a pair both of whose items retrieved the other is one pair, one record.
    for direction, kind in (("i2i", "SIS"), ("c2c", "STS")):
        count = records.filter(direction=direction).count()
        assert 3 <= count <= 5 and count == sum(p.kind == kind for p in pairs)
    for pair in pairs:
        if pair.kind == "SIS":
            query, found = (pair.image_b, pair.image_a) if pair.swapped else (pair.image_a, pair.image_b)
            q, f = joint.images.index(query), joint.images.index(found)
            sims = IMAGES @ IMAGES[q]
            sims[q] = -np.inf
            # Query first: either the stored order is the query's, or a mutual best neighbour.
            assert f == int(np.argmax(sims)) or q == int(np.argmax(IMAGES @ IMAGES[f] - 2 * np.eye(12)[f]))


def test_two_models_are_pooled_once_per_pair_and_queued_pairs_are_left_out(joint):
    first = run(create(joint, {"models": [CLIP], "directions": ["c2i"]}, k=1))
    both = run(create(joint, {"models": [CLIP, OTHER], "directions": ["c2i"]}, k=1, seed=1))
    # clip's 24 rank-1 pairs are queued already: the second batch queues only other's new ones.
    mine = set(Pair.objects.filter(batch=first).values_list("caption_a", "image_a"))
    theirs = set(Pair.objects.filter(batch=both).values_list("caption_a", "image_a"))
    assert not mine & theirs and 0 < len(theirs) <= 24
    # clip's records stay those of the first audit; other's retrievals of clip's pairs are
    # recorded against those pairs by the second.
    records = AuditRetrieval.objects.filter(model_name="clip")
    assert records.count() == 24 and set(records.values_list("batch", flat=True)) == {first.pk}
    shared = AuditRetrieval.objects.filter(batch=both, pair__batch=first)
    assert set(shared.values_list("model_name", flat=True)) <= {"other"}
    assert AuditRetrieval.objects.filter(batch=both, model_name="other").count() == 24
    pooled = run(create(joint, {"models": [CLIP, OTHER], "directions": ["i2c"]}, k=3))
    per_pair = {}
    for pair_id, model in AuditRetrieval.objects.filter(batch=pooled).values_list("pair_id", "model_name"):
        per_pair.setdefault(pair_id, set()).add(model)
    assert set(Pair.objects.filter(batch=pooled).values_list("id", flat=True)) <= set(per_pair)
    assert all(models <= {"clip", "other"} for models in per_pair.values())
    # i2c retrievals of pairs the c2i audits queued are recorded, in their own direction.
    earlier = AuditRetrieval.objects.filter(batch=pooled, pair__batch__in=[first, both])
    assert earlier.exists() and set(earlier.values_list("direction", flat=True)) == {"i2c"}


def test_a_pair_an_audit_shares_with_another_method_of_its_batch_is_queued_once(joint):
    # Most captions' best image under clip is their own: c2i_original queues those first.
    batch = run(
        create(
            joint, {"models": [CLIP], "directions": ["c2i"]}, k=1, methods={"c2i_original": None, "model_topk": None}
        )
    )
    assert batch.pairs_per_method["c2i_original"] == 24
    assert 0 <= batch.pairs_per_method.get("topk_c2i", 0) < 24
    assert Pair.objects.filter(batch=batch).count() == sum(batch.pairs_per_method.values())
    # Every rank-1 retrieval is recorded, also of pairs queued as c2i_original.
    assert AuditRetrieval.objects.filter(batch=batch).count() == 24


def test_the_budget_keeps_the_best_ranks(joint):
    batch = run(create(joint, {"models": [CLIP], "directions": ["c2i"]}, k=3, budget=24))
    assert Pair.objects.filter(batch=batch).count() == 24
    assert set(AuditRetrieval.objects.filter(batch=batch).values_list("rank", flat=True)) == {1}


@pytest.mark.parametrize(
    ("audit", "methods", "message"),
    [
        (None, None, "model_topk needs an audit configuration"),
        ({"models": [CLIP]}, {"i2i_csim": 10}, "an audit needs model_topk"),
        ({"models": []}, None, 'model_topk needs "audit"'),
        ({"models": [CLIP], "colour": 1}, None, "unknown audit setting"),
        ({"models": [CLIP, CLIP]}, None, "audited model names must differ"),
        ({"models": [{"name": "x", "image_space": "nope"}]}, None, "no embedding space 'nope'"),
        ({"models": [{"name": "x", "image_space": "clip-txt"}]}, None, "holds caption vectors, not image vectors"),
        ({"models": [{"name": "x", "image_space": "clip-img"}], "directions": ["c2i"]}, None, "cannot be audited c2i"),
        (
            {"models": [{"name": "x", "image_space": "small-img", "caption_space": "clip-txt"}], "directions": ["i2c"]},
            None,
            "cannot be audited i2c",
        ),
        ({"models": [CLIP], "directions": ["sideways"]}, None, "unknown audit direction"),
        ({"models": [CLIP], "queries": 0}, None, "audit queries must be a whole number"),
        ({"models": [{"name": ""}]}, None, "needs a name"),
    ],
)
def test_bad_audits_are_named_and_nothing_is_stored(joint, audit, methods, message):
    with pytest.raises(SamplingInputError, match=message):
        create(joint, audit, methods=methods)
    assert not SamplingBatch.objects.exists()


def test_k_and_budget_beyond_the_split_are_refused(joint):
    with pytest.raises(SamplingInputError, match="k=13 but a query of c2i has only 12 candidates.*k is at most 12"):
        create(joint, {"models": [CLIP], "directions": ["c2i"]}, k=13)
    with pytest.raises(SamplingInputError, match="budget 49 is more than the 48 pairs the audit can retrieve at most"):
        create(joint, {"models": [CLIP], "directions": ["c2i"]}, k=2, budget=49)


def test_an_audit_through_the_api(joint, admin_api):
    response = admin_api.post(
        "/api/sampling/batches/",
        {
            "dataset": joint.dataset.name,
            "split": joint.split.name,
            "methods": {"model_topk": None},
            "k": 1,
            "audit": {"models": [CLIP], "directions": ["c2i", "i2c"]},
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["audit"]["directions"] == ["c2i", "i2c"]
    batch = run(SamplingBatch.objects.get(pk=body["id"]))
    assert set(batch.pairs_per_method) <= {"topk_c2i", "topk_i2c"} and sum(batch.pairs_per_method.values()) > 0
    bad = admin_api.post(
        "/api/sampling/batches/",
        {"dataset": joint.dataset.name, "split": joint.split.name, "methods": {"model_topk": None}, "k": 1},
        format="json",
    )
    assert bad.status_code == 400 and "needs an audit configuration" in bad.content.decode()


AUDIT_URL = "/admin/sampling/samplingbatch/audit/"


def test_an_admin_audits_two_models_from_the_admin_page(joint, client, django_capture_on_commit_callbacks):
    from annotation.models import EmbeddingSpace
    from tests.factories import UserFactory

    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    listing = client.get("/admin/sampling/samplingbatch/").content.decode()
    assert 'href="/admin/sampling/samplingbatch/audit/">Audit models</a>' in listing
    page = client.get(AUDIT_URL).content.decode()
    assert "Models to audit" in page and 'name="model_0_image"' in page and 'value="c2i"' in page
    space = {s.name: s.pk for s in EmbeddingSpace.objects.all()}
    data = {
        "split": joint.split.pk,
        "k": 2,
        "queries": 6,
        "directions": ["c2i", "i2c"],
        "ratings_per_pair": 5,
        "seed": 0,
        "priority": 3,
        "start": "on",
        "model_0_name": "clip",
        "model_0_image": space["clip-img"],
        "model_0_caption": space["clip-txt"],
        "model_1_name": "other",
        "model_1_image": space["other-img"],
        "model_1_caption": space["other-txt"],
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(AUDIT_URL, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    batch = SamplingBatch.objects.get()
    assert batch.status == "succeeded", batch.error
    assert batch.audit == {"models": [CLIP, OTHER], "directions": ["c2i", "i2c"], "queries": 6}
    assert batch.priority == 3 and set(batch.pairs_per_method) <= {"topk_c2i", "topk_i2c"}
    detail = client.get(f"/admin/sampling/samplingbatch/{batch.pk}/change/").content.decode()
    assert "clip-img" in detail
    pairs_link = f"/admin/annotation/pair/?batch__id__exact={batch.pk}"
    assert pairs_link in detail and f"/admin/sampling/auditretrieval/?batch__id__exact={batch.pk}" in detail
    listed = client.get(pairs_link)
    assert listed.status_code == 200 and "topk_c" in listed.content.decode()
    said = [str(message) for message in response.wsgi_request._messages]
    assert f"Batch #{batch.pk} audits c2i, i2c with the top 2 of each query." in said
    retrievals = client.get("/admin/sampling/auditretrieval/").content.decode()
    assert "clip" in retrievals and "other" in retrievals
    no_models = {key: value for key, value in data.items() if not key.startswith("model_")}
    assert "Fill in at least one model" in client.post(AUDIT_URL, no_models).content.decode()
    # A model that cannot be audited in a chosen direction: said on the form, nothing made.
    bad = dict(data, model_1_caption="", model_1_name="images only")
    response = client.post(AUDIT_URL, bad)
    assert response.status_code == 200
    assert "model &#x27;images only&#x27; cannot be audited c2i" in response.content.decode()
    assert SamplingBatch.objects.count() == 1
