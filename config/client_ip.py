"""The client's address behind a reverse proxy, for django-axes' lockouts
(AXES_CLIENT_IP_CALLABLE, set when CLIENT_IP_HEADER is) and the crowd's limits on new
participant accounts (``request_client_ip``)."""

from django.conf import settings
from django.core.exceptions import SuspiciousOperation


def client_ip(request) -> str:
    """The address in ``settings.CLIENT_IP_HEADER``. For X-Forwarded-For, the last entry:
    the one our proxy appended; earlier ones come from the client and can be forged.
    Raises SuspiciousOperation (a 400) when the header is missing, which means the request
    did not come through the proxy: counting it against the proxy's own address would
    lump every such caller together."""
    value = request.META.get(settings.CLIENT_IP_HEADER, "").strip()
    if not value:
        raise SuspiciousOperation(f"the request has no {settings.CLIENT_IP_HEADER} header (CLIENT_IP_HEADER)")
    return value.split(",")[-1].strip()


def request_client_ip(request) -> str:
    """The client's address: ``client_ip``'s when CLIENT_IP_HEADER is set (the app runs
    behind a proxy), else the connection's own (REMOTE_ADDR: the app serves clients
    directly)."""
    if settings.CLIENT_IP_HEADER:
        return client_ip(request)
    return request.META.get("REMOTE_ADDR", "")
