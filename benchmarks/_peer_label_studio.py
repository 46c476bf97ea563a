"""Label Studio (PyPI ``label-studio`` 1.23.2) as the peer of ``bench_peer.py``.

Served as ``label-studio start`` serves it (Django's threaded server, one process), on
PostgreSQL in a database of its own (``DJANGO_DB=default`` and ``POSTGRE_*``, its
documented variables): on its default SQLite, 32 annotators mostly measure "database is
locked" retries, and our app runs on PostgreSQL too. Sentry, analytics and the PyPI
version check are switched off (no traffic leaves the machine).

The task: a project per store whose label config shows the two sentences and one
``Number`` control 0-5 in steps of 0.01, ``maximum_annotations`` 5 and
``overlap_cohort_percentage`` 100 (every task wants 5 annotations), the default
sequential sampling; tasks through the import API. Users: the owner made by ``start``
(``--username``, ``--user-token``, ``--enable-legacy-api-token``), the annotators as
``start`` makes its user (Django's ``create_user`` in the organization, in a script run
by the peer's own Python), each with its API token (``Authorization: Token``). A claim is
``GET /api/projects/<id>/next/`` (404 when nothing is left), a submit ``POST
/api/tasks/<id>/annotations/?project=<id>`` with the Number's result, as the labeling
frontend posts it (201 when stored).

The store is its PostgreSQL database: table ``task_completion`` (annotations), cancelled
(skipped) ones left out.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import psycopg2
from _peer_client import ClaimError, Rater
from _peer_potato import wait_healthy

PACKAGES = ["label-studio==1.23.2"]
VERSION_CHECK = ("label-studio", "1.23.2")
OWNER = "owner@bench.local"

LABEL_CONFIG = """<View>
  <Header value="How similar in meaning are the two sentences (0 = different topics, 5 = equivalent)?"/>
  <Text name="text1" value="$text1"/>
  <Text name="text2" value="$text2"/>
  <Number name="score" toName="text1" min="0" max="5" step="0.01" required="true"/>
</View>"""

# Run by the peer's Python: the annotators, made as ``label-studio start`` makes its user.
MAKE_USERS = """
import json, os, pathlib, sys
import label_studio
sys.path.insert(0, str(pathlib.Path(label_studio.__file__).parent))
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'label_studio.core.settings.label_studio')
from django.core.wsgi import get_wsgi_application
get_wsgi_application()
from organizations.models import Organization
from rest_framework.authtoken.models import Token
from users.models import User
org = Organization.objects.first()
made = []
for number in range(int(sys.argv[1])):
    user = User.objects.create_user(email=f'rater{number}@bench.local', password=None)
    org.add_user(user)
    user.active_organization = org
    user.save(update_fields=['active_organization'])
    made.append([user.id, Token.objects.get_or_create(user=user)[0].key])
print(json.dumps(made))
"""


def server_env(data_dir: Path, database: str, dsn: str) -> dict:
    """The server's whole environment: PostgreSQL from ``dsn``'s server, ``database`` in it."""
    url = urlparse(dsn)
    env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ}
    return env | {
        "HOME": str(data_dir),
        "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
        "DJANGO_DB": "default",
        "POSTGRE_NAME": database,
        "POSTGRE_USER": url.username or "postgres",
        "POSTGRE_PASSWORD": url.password or "",
        "POSTGRE_HOST": url.hostname or "127.0.0.1",
        "POSTGRE_PORT": str(url.port or 5432),
        "SENTRY_DSN": "",
        "FRONTEND_SENTRY_DSN": "",
        "COLLECT_ANALYTICS": "false",
        "LATEST_VERSION_CHECK": "false",
        "PYTHONUNBUFFERED": "1",
    }


class LabelStudio:
    """One ``label-studio start`` server, its owner's token and its annotators."""

    def __init__(self, venv: Path, data_dir: Path, port: int, database: str, dsn: str):
        self.venv, self.data_dir, self.port, self.database = venv, data_dir, port, database
        self.env = server_env(data_dir, database, dsn)
        self.owner_token = secrets.token_hex(20)
        self.server: subprocess.Popen | None = None
        self.user_ids: dict[str, int] = {}  # token -> user id

    def start(self, log_path: Path) -> subprocess.Popen:
        """Start (it migrates its database first); returns once ``/health`` answers."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [
            str(self.venv / "bin" / "label-studio"),
            "start",
            "--no-browser",
            "--internal-host=127.0.0.1",
            f"--port={self.port}",
            f"--username={OWNER}",
            f"--password={secrets.token_hex(12)}",
            f"--user-token={self.owner_token}",
            "--enable-legacy-api-token",
        ]
        with log_path.open("w") as out:
            self.server = subprocess.Popen(
                command, cwd=self.data_dir, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        wait_healthy(self.server, self.port, "/health/", log_path, limit_s=600)
        return self.server

    def make_annotators(self, count: int) -> list[str]:
        """``count`` annotators in the organization; returns their tokens."""
        made = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", MAKE_USERS, str(count)],
            cwd=self.data_dir,
            env=self.env,
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            raise SystemExit(f"label-studio: making annotators failed:\n{made.stderr[-3000:]}")
        pairs = json.loads(made.stdout.strip().splitlines()[-1])
        self.user_ids |= {token: user_id for user_id, token in pairs}
        return [token for _, token in pairs]

    def _api(self, method: str, path: str, payload) -> dict | list:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        headers = {"Authorization": f"Token {self.owner_token}", "Content-Type": "application/json"}
        conn.request(method, path, body=json.dumps(payload).encode(), headers=headers)
        answer = conn.getresponse()
        body = answer.read()
        conn.close()
        if answer.status not in (200, 201):
            raise SystemExit(f"label-studio: {method} {path} answered {answer.status}: {body[:500]!r}")
        return json.loads(body)

    def project(self, title: str, pairs: list[tuple[str, str]]) -> int:
        """A project with the task's settings and one task per pair; returns its id."""
        project = self._api(
            "POST",
            "/api/projects/",
            {
                "title": title,
                "label_config": LABEL_CONFIG,
                "maximum_annotations": 5,
                "overlap_cohort_percentage": 100,
            },
        )
        tasks = [{"text1": first, "text2": second} for first, second in pairs]
        imported = self._api("POST", f"/api/projects/{project['id']}/import", tasks)
        if imported.get("task_count") != len(pairs):
            raise SystemExit(f"label-studio: imported {imported.get('task_count')} of {len(pairs)} tasks")
        return project["id"]


class LabelStudioApp:
    """The annotator's requests to one project (see the module docstring)."""

    name = "label-studio"

    def __init__(self, port: int, project: int):
        self.port, self.project = port, project

    @staticmethod
    def _headers(rater: Rater) -> dict[str, str]:
        return {"Authorization": f"Token {rater.key}", "Content-Type": "application/json"}

    async def login(self, rater: Rater) -> None:
        """Token users: nothing to do."""

    async def claim(self, rater: Rater) -> int | None:
        status, _, payload = await rater.conn.request(
            "GET", f"/api/projects/{self.project}/next/", headers=self._headers(rater)
        )
        if status == 404:
            return None
        if status != 200:
            raise ClaimError(f"next {status}")
        return json.loads(payload)["id"]

    async def submit(self, rater: Rater, item: int, score: float) -> bool:
        result = [{"from_name": "score", "to_name": "text1", "type": "number", "value": {"number": round(score, 2)}}]
        body = json.dumps({"result": result, "lead_time": 17.0, "project": self.project}).encode()
        status, _, _ = await rater.conn.request(
            "POST", f"/api/tasks/{item}/annotations/?project={self.project}", body=body, headers=self._headers(rater)
        )
        return status == 201


def stored(dsn: str, project: int, user_ids: dict[str, int]) -> dict:
    """What the project stored: ``by_rater`` {token: annotations}, ``per_item`` {task:
    [annotations, distinct annotators]}."""
    conn = psycopg2.connect(dsn)
    with conn, conn.cursor() as cur:
        cur.execute(
            "SELECT completed_by_id, count(*) FROM task_completion "
            "WHERE project_id = %s AND NOT was_cancelled GROUP BY 1",
            [project],
        )
        by_user = dict(cur.fetchall())
        cur.execute(
            "SELECT task_id, count(*), count(DISTINCT completed_by_id) FROM task_completion "
            "WHERE project_id = %s AND NOT was_cancelled GROUP BY 1",
            [project],
        )
        per_item = {task: [n, distinct] for task, n, distinct in cur.fetchall()}
    conn.close()
    return {"by_rater": {token: by_user.get(uid, 0) for token, uid in user_ids.items()}, "per_item": per_item}
