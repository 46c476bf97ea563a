import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from django.conf import settings  # noqa: E402

from web.operations import OperationsApplication  # noqa: E402  (needs Django set up)
from web.rating_wsgi import RatingCycleApplication  # noqa: E402
from web.wsgi_environ import WithoutProcessEnvironment  # noqa: E402

# The rating cycle's token requests skip the middleware chain (see web/rating_wsgi.py),
# unless that shortcut, or the token view's it leads to, is off (RATING_SHORTCUTS_OFF).
# The server process's environment stays out of every request's environ: granian and
# runserver's wsgiref both copy it in (see web/wsgi_environ.py). Request ids, /healthz,
# /readyz and, when METRICS_ENABLED, the counts and /metrics wrap both ways alike
# (web/operations.py).
if not {"wsgi", "token_view"} & settings.RATING_SHORTCUTS_OFF:
    application = RatingCycleApplication(application)
application = WithoutProcessEnvironment(OperationsApplication(application), os.environ)

from config.runtime import check_services, describe_mode  # noqa: E402  (needs Django set up)

check_services()
logging.getLogger("config").info("Serving in %s", describe_mode())
