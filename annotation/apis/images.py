"""Image files of datasets kept on this server."""

import mimetypes

from django.http import FileResponse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from annotation import selectors


class ImageFileApi(APIView):
    """An image file of a dataset kept on this server (any signed-in user). Cached by
    the browser and revalidated with Last-Modified / ETag."""

    def perform_content_negotiation(self, request, force=False):
        # The file is the answer whatever the Accept header says; errors are JSON.
        return (JSONRenderer(), JSONRenderer.media_type)

    @extend_schema(responses={(200, "image/*"): OpenApiTypes.BINARY})
    def get(self, request, dataset: str, key: str):
        path = selectors.image_file_get(dataset=dataset, key=key)
        stat = path.stat()
        etag = f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"'
        last_modified = int(stat.st_mtime)
        not_modified = get_conditional_response(request._request, etag=etag, last_modified=last_modified)
        if not_modified is None:
            content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            response = FileResponse(path.open("rb"), content_type=content_type)
        else:
            response = not_modified
        response["ETag"] = etag
        response["Last-Modified"] = http_date(last_modified)
        # Private: images are only for signed-in users; a day, then revalidated cheaply.
        response["Cache-Control"] = "private, max-age=86400"
        return response
