"""The participants of a campaign link as CSV (admins and researchers), to approve and
reject them on the crowd platform."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from annotation.catalog.selectors import dataset_get
from annotation.core.roles import IsResearcher
from annotation.quality.participants import campaign_link_of, participants_csv, participants_csv_name
from config.openapi import error_response


class CampaignLinkParticipantsApi(APIView):
    """One row per participant of the link, in the order they joined: ``external_id``,
    ``status`` (started, or how the run ended: completed, partial, returned, left, declined,
    screened_out), ``started_at``, ``finished_at``,
    ``items_rated`` (ratings of any status and gold items), ``gold_items``,
    ``gold_error``, ``median_seconds_per_item``, ``share_under_speed_floor``,
    ``gold_skip_share``, ``loo_r`` (from the dataset's newest campaign snapshot),
    ``flagged`` (yes/no under the dataset's flag thresholds) and ``flag_reasons``. Empty
    cells: no such figure yet. Cells that begin like a spreadsheet formula are escaped."""

    permission_classes = [IsResearcher]

    @extend_schema(
        responses={(200, "text/csv"): OpenApiTypes.BINARY, 404: error_response("No such dataset or link.")},
    )
    def get(self, request, dataset: str, link_id: int):
        link = campaign_link_of(dataset=dataset_get(name=dataset), link_id=link_id)
        response = HttpResponse(participants_csv(link), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{participants_csv_name(link)}"'
        return response
