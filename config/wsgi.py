import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from config.rating_wsgi import RatingCycleApplication  # noqa: E402  (needs Django set up)

# The rating cycle's token requests skip the middleware chain (see config/rating_wsgi.py).
application = RatingCycleApplication(application)

from config.runtime import check_services, describe_mode  # noqa: E402  (needs Django set up)

check_services()
logging.getLogger("config").info("Serving in %s", describe_mode())
