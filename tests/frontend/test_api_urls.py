"""The rating page's API client appends fixed paths to the base the page hands it
(frontend/static/frontend/rate/api.js); each must be the URL the API is routed at."""

from django.urls import reverse

from frontend.views import rate_api_base
from tests.support.rating_support import api_id


def test_rate_api_base_plus_the_client_paths_are_the_api_urls():
    base = rate_api_base("coco-val")
    assert base == "/api/rate/coco-val/"
    assert base + "claim/" == reverse("rate-claim", args=["coco-val"])
    assert base + "progress/" == reverse("rate-progress", args=["coco-val"])
    assert base + "ratings/" == reverse("rate-ratings", args=["coco-val"])
    for action in ("heartbeat", "submit", "skip", "flag"):
        # reverse() writes a slot's opaque id, as the API gives it to the page.
        assert base + f"slots/{api_id('slot', 7)}/{action}/" == reverse(f"rate-{action}", args=["coco-val", 7])
