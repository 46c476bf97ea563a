import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from web.rating_wsgi import RatingCycleApplication  # noqa: E402  (needs Django set up)
from web.wsgi_environ import WithoutProcessEnvironment  # noqa: E402

# The rating cycle's token requests skip the middleware chain (see web/rating_wsgi.py).
# The server process's environment stays out of every request's environ: granian and
# runserver's wsgiref both copy it in (see web/wsgi_environ.py).
application = WithoutProcessEnvironment(RatingCycleApplication(application), os.environ)

from config.runtime import check_services, describe_mode  # noqa: E402  (needs Django set up)

check_services()
logging.getLogger("config").info("Serving in %s", describe_mode())
