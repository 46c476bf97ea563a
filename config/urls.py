from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation.urls import image_urlpatterns
from config.runtime import describe_mode

admin.site.site_header = "CxC annotate admin"
admin.site.index_title = describe_mode()
# Links the campaign pages above the app list (frontend/templates/admin/cxc_index.html).
admin.site.index_template = "admin/cxc_index.html"
# The app list is one click away on the admin home; its sidebar would take a quarter of
# a 1280 px screen from the run and rating tables.
admin.site.enable_nav_sidebar = False

urlpatterns = [
    # The API first: the rating cycle's requests are nearly all requests (annotation.urls
    # lists them first too).
    path("api/", include("annotation.urls")),
    path("admin/", admin.site.urls),
    path("media/images/", include(image_urlpatterns)),
    path("api/sampling/", include("sampling.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("frontend.urls")),
]

handler400 = "config.exceptions.bad_request"
handler403 = "config.exceptions.permission_denied"
handler404 = "config.exceptions.page_not_found"
handler500 = "config.exceptions.server_error"
