from django.conf import settings


def run_mode(request):
    return {"run_mode": settings.RUN_MODE}
