"""Admin pages for what raters produce: pairs, their slots, ratings and flags.

All of it is derived data, written only by the sampling and rating services (which keep
counters and slot copies in step; a slot's copy of the pair's count is kept while it is
open, see ``RatingSlot``), so these pages show it and never add or edit it. The
one write is an action: retiring flagged pairs (``annotation.serving.pairs.pairs_retire``).
"""

from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from annotation.models import Flag, Pair, Rating, RatingSlot
from annotation.serving import image_url_of
from annotation.serving.pairs import pairs_retire


class DerivedDataAdmin(admin.ModelAdmin):
    """Read only: no add, no change, no delete (that would leave counters stale)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


def _image_tag(image, dataset, max_px: int) -> str:
    url = image_url_of(dataset, image)
    return format_html(
        '<figure style="display:inline-block;margin:0 .5em 0 0;vertical-align:top"><img src="{}" alt="{}" '
        'style="max-width:{}px;max-height:{}px"><figcaption><small>{}</small></figcaption></figure>',
        url,
        image.key,
        max_px,
        max_px,
        image.key,
    )


def pair_items_html(pair: Pair, *, max_px: int = 320) -> str:
    """The pair as a rater sees it: caption texts and pictures, in the order it came in."""
    parts = []
    for caption in (pair.caption_a, pair.caption_b):
        if caption is not None:
            parts.append(format_html("<p><q>{}</q> <small>{}</small></p>", caption.text, caption.key))
    for image in (pair.image_a, pair.image_b):
        if image is not None:
            parts.append(_image_tag(image, pair.dataset, max_px))
    if pair.swapped:
        parts.reverse()
    return format_html_join("", "{}", ((part,) for part in parts))


@admin.register(Pair)
class PairAdmin(DerivedDataAdmin):
    list_display = [
        "id",
        "kind",
        "sampling_method",
        "batch",
        "ratings_done",
        "ratings_required",
        "priority",
        "retired_at",
    ]
    list_filter = ["kind", "sampling_method", "dataset"]
    list_select_related = ["batch"]
    show_full_result_count = False
    fields = ["items", "kind", "sampling_method", "dataset", "split", "batch", "ratings_done", "ratings_required",
              "priority", "swapped", "retired_at", "scores", "created_at"]  # fmt: skip
    readonly_fields = fields

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("dataset", "split", "caption_a", "caption_b", "image_a", "image_b")
        )

    @admin.display(description="items")
    def items(self, pair: Pair) -> str:
        return pair_items_html(pair)

    @admin.display(description="ratings")
    def scores(self, pair: Pair) -> str:
        ratings = pair.ratings.order_by("created_at")
        return ", ".join(f"{rating.score:.2f}" for rating in ratings) or "-"


@admin.register(RatingSlot)
class RatingSlotAdmin(DerivedDataAdmin):
    list_display = ["id", "pair", "index", "state", "rater", "lease_expires_at"]
    list_filter = ["state", "kind"]
    list_select_related = ["pair", "rater"]
    show_full_result_count = False


@admin.register(Rating)
class RatingAdmin(DerivedDataAdmin):
    list_display = ["id", "pair", "kind", "rater", "score_shown", "time_on_item_ms", "batch", "created_at"]
    list_filter = ["pair__kind", "pair__batch", ("rater", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["pair", "rater"]
    show_full_result_count = False

    @admin.display(description="kind", ordering="pair__kind")
    def kind(self, rating: Rating) -> str:
        return rating.pair.kind

    @admin.display(description="score", ordering="score")
    def score_shown(self, rating: Rating) -> str:
        return f"{rating.score:.2f}"

    @admin.display(description="batch", ordering="pair__batch")
    def batch(self, rating: Rating) -> int:
        return rating.pair.batch_id


@admin.register(Flag)
class FlagAdmin(admin.ModelAdmin):
    list_display = ["id", "preview", "reason", "note", "rater", "resolved"]
    list_filter = ["reason", "resolved"]
    list_select_related = [
        "rater",
        "pair__dataset",
        "pair__caption_a",
        "pair__caption_b",
        "pair__image_a",
        "pair__image_b",
    ]
    readonly_fields = ["pair", "rater", "reason", "note", "created_at", "preview"]
    actions = ["retire_pairs"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="pair")
    def preview(self, flag: Flag) -> str:
        items = pair_items_html(flag.pair, max_px=120)
        return format_html('<div style="min-width:260px">#{} {}<br>{}</div>', flag.pair_id, flag.pair.kind, items)

    @admin.action(description="Retire the flagged pairs (no more ratings; left out of exports)")
    def retire_pairs(self, request, queryset):
        retired = pairs_retire(pair_ids=list(queryset.values_list("pair_id", flat=True).distinct()))
        messages.info(request, f"Retired {retired} pair(s); their flags are resolved.")
