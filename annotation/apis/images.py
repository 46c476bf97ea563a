"""Image files of datasets kept on this server."""

from django.http import FileResponse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from annotation.catalog import selectors

# What an image file is sent as, by suffix. A dataset may name files of other kinds; they
# go out as application/octet-stream, which the schema lists too.
IMAGE_MEDIA_TYPES = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
OTHER_FILE = "application/octet-stream"


class ImageFileApi(APIView):
    """An image file of a dataset kept on this server (any signed-in user). Cached by
    the browser and revalidated with Last-Modified / ETag."""

    def perform_content_negotiation(self, request, force=False):
        # The file is the answer whatever the Accept header says; errors are JSON.
        return (JSONRenderer(), JSONRenderer.media_type)

    @extend_schema(
        responses={
            **{(200, media): OpenApiTypes.BINARY for media in dict.fromkeys([*IMAGE_MEDIA_TYPES.values(), OTHER_FILE])},
            304: OpenApiResponse(description="Not modified since the If-None-Match / If-Modified-Since given."),
            412: OpenApiResponse(description="The If-Match / If-Unmodified-Since given does not hold."),
        }
    )
    def get(self, request, dataset: str, key: str):
        path = selectors.image_file_get(dataset=dataset, key=key)
        stat = path.stat()
        etag = f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"'
        last_modified = int(stat.st_mtime)
        not_modified = get_conditional_response(request._request, etag=etag, last_modified=last_modified)
        if not_modified is None:
            content_type = IMAGE_MEDIA_TYPES.get(path.suffix.lower(), OTHER_FILE)
            response = FileResponse(path.open("rb"), content_type=content_type)
        else:
            response = not_modified
        response["ETag"] = etag
        response["Last-Modified"] = http_date(last_modified)
        # Private: images are only for signed-in users; a day, then revalidated cheaply.
        response["Cache-Control"] = "private, max-age=86400"
        return response
