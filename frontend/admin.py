from django.contrib import admin, messages
from django.utils.html import format_html

from annotation.serving.pairs import pairs_retire
from frontend.models import WorkedExample
from frontend.selectors import worked_example_queued_pair


@admin.register(WorkedExample)
class WorkedExampleAdmin(admin.ModelAdmin):
    """Worked examples; raters see them solved, so one whose pair is queued is flagged
    here (sampling never queues an active example's pair, but an uploaded list or an
    earlier batch can have)."""

    list_display = ["id", "dataset", "kind", "reference_score", "position", "active", "in_queue", "explanation"]
    list_filter = ["dataset", "kind", "active"]
    list_editable = ["position", "active"]
    raw_id_fields = ["caption_a", "caption_b", "image_a", "image_b"]
    actions = ["retire_queued_pairs"]

    @admin.display(description="in the queue")
    def in_queue(self, example: WorkedExample) -> str:
        pair = worked_example_queued_pair(example=example)
        if pair is None:
            return "-"
        return format_html('<strong title="Raters would be served it as a task">pair #{}</strong>', pair.pk)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        pair = worked_example_queued_pair(example=obj)
        if obj.active and pair is not None:
            messages.warning(
                request,
                f"This example's pair is queued as pair #{pair.pk}: raters would be served a solved example. "
                "Retire it with the action on the examples list, or choose another pair.",
            )

    @admin.action(description="Retire the queued pairs of the selected examples")
    def retire_queued_pairs(self, request, queryset):
        pairs = [worked_example_queued_pair(example=example) for example in queryset]
        retired = pairs_retire(pair_ids=[pair.pk for pair in pairs if pair is not None])
        messages.info(request, f"Retired {retired} queued pair(s); raters will not be served them.")
