"""Uploads in the tests: the names of the files the upload storage holds, and large
multipart bodies written to disk and posted through the WSGI handler as a server hands
them over (read from the file as the request reads it, never held in memory)."""

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from django.test.client import ClientHandler

from annotation.catalog.uploads import uploads_root

BOUNDARY = "largeuploadboundary"
REPO_DIR = Path(__file__).resolve().parents[2]


def stored_names() -> list[str]:
    """The files under DATA_DIR/uploads, by name."""
    root = uploads_root()
    return sorted(p.name for p in root.rglob("*") if p.is_file()) if root.exists() else []


def multipart_file(
    path: Path, chunks: Iterable[bytes], *, filename: str, fields: Mapping[str, str] | None = None
) -> int:
    """Write a multipart body to ``path``: the form ``fields``, then one file field
    ``file`` called ``filename`` holding the ``chunks``. Returns its size in bytes."""
    with open(path, "wb") as out:
        for name, value in (fields or {}).items():
            out.write(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
        out.write(
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
            "Content-Type: text/csv\r\n\r\n".encode()
        )
        for chunk in chunks:
            out.write(chunk)
        out.write(f"\r\n--{BOUNDARY}--\r\n".encode())
    return path.stat().st_size


def post_through_wsgi(body_path: Path, size: int, *, path_info: str, headers: Mapping[str, str]):
    """POST the body of ``multipart_file`` to ``path_info`` with these WSGI ``headers``
    (``HTTP_AUTHORIZATION``, ``HTTP_COOKIE`` ...), CSRF not enforced, as the test client."""
    with open(body_path, "rb") as stream:
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": path_info,
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "80",
            "wsgi.url_scheme": "http",
            "wsgi.input": stream,
            "CONTENT_TYPE": f"multipart/form-data; boundary={BOUNDARY}",
            "CONTENT_LENGTH": str(size),
            **headers,
        }
        return ClientHandler(enforce_csrf_checks=False)(environ)


# A process of its own for one request: its peak resident memory is the request's alone
# (the test process's own peak may come from any earlier test). Linux only (/proc).
# The peak is the memory map's high-water mark (VmHWM), which starts afresh at the exec:
# getrusage's ru_maxrss keeps the forked copy's, which is the test process's own size.
_CHILD = """
import json, re, sys
from pathlib import Path
import django
django.setup()
from tests.support.uploads import post_through_wsgi
body, size, path_info, headers = json.loads(sys.argv[1])
response = post_through_wsgi(Path(body), size, path_info=path_info, headers=headers)
status = Path("/proc/self/status").read_text()
print(json.dumps({
    "status": response.status_code,
    "content": response.content.decode(errors="replace")[:2000],
    "peak_rss_bytes": int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) * 1024,
}))
"""


def post_in_a_process(body_path: Path, size: int, *, path_info: str, headers: Mapping[str, str], env) -> dict:
    """``post_through_wsgi`` in a new Python process with environment ``env`` (a database
    whose rows the test committed). Returns the answer's ``status`` and ``content`` and the
    process's peak resident memory ``peak_rss_bytes`` (Django and the app loaded included)."""
    argument = json.dumps([str(body_path), size, path_info, dict(headers)])
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, argument], cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
