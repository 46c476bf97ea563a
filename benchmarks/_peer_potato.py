"""Potato (PyPI ``potato-annotation`` 2.12.1) as the peer of ``bench_peer.py``.

Configured as the closest task to ours: every item is a pair of sentences shown side by
side (a two-element text list, ``list_as_text.horizontal``), one slider 0-5 in steps of
0.01, ``num_annotators_per_item: 5``, ``assignment_strategy: random`` with no per-user
quota (Potato then hands out one item at a time, skipping items at their cap), and
passwordless URL logins (``login.type: url_direct``: ``GET /?user=<name>`` registers the
name and starts a session). Served as its container image serves it: gunicorn on the
``create_app`` factory with one worker and 8 threads (Potato keeps its item pool in
memory per process, so its deploy checks refuse more than one worker).

A rater's claim is what the annotation page's Next does without the page: ``POST
/annotate`` ``{"action": "next_instance"}`` with ``X-Potato-Navigation: 1`` (moves the
rater on, assigning an item when it has none: a JSON answer, or a redirect once nothing
is left), then ``GET /api/current_instance`` for the item's text. The first claim after
login skips the move (login already assigned an item). A submit is the page's save,
``POST /updateinstance`` with the slider's value as the page sends it.

The store is Potato's output directory: ``<output>/<user>/user_state.json`` per user,
written on every save; an item's answers are the users whose state holds a value for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from _peer_client import ClaimError, Rater

PACKAGES = ["potato-annotation==2.12.1", "gunicorn==27.0.1"]
VERSION_CHECK = ("potato-annotation", "2.12.1")
THREADS = 8
SCHEMA = "similarity"

CONFIG = """\
annotation_task_name: cxc-bench-peer
task_dir: .
output_annotation_dir: annotation_output/
data_files:
  - data/items.jsonl
item_properties:
  id_key: id
  text_key: text
list_as_text:
  text_list_prefix_type: alphabet
  horizontal: true
login:
  type: url_direct
  url_argument: user
require_password: false
num_annotators_per_item: 5
max_annotations_per_user: -1
assignment_strategy: random
annotation_schemes:
  - annotation_type: slider
    name: {schema}
    description: How similar in meaning are the two sentences (0 = different topics, 5 = equivalent)?
    min_value: 0
    max_value: 5
    starting_value: 0
    step: 0.01
"""


def write_task(task_dir: Path, pairs: list[tuple[str, str]]) -> None:
    """A fresh task directory: the config and one JSON line per pair."""
    if task_dir.exists():
        subprocess.run(["rm", "-rf", str(task_dir)], check=True)
    (task_dir / "data").mkdir(parents=True)
    (task_dir / "config.yaml").write_text(CONFIG.format(schema=SCHEMA))
    with (task_dir / "data" / "items.jsonl").open("w") as out:
        for number, (first, second) in enumerate(pairs):
            out.write(json.dumps({"id": f"pair{number:06d}", "text": [first, second]}) + "\n")


def start(venv: Path, task_dir: Path, port: int, log_path: Path) -> subprocess.Popen:
    """Potato's gunicorn on 127.0.0.1:``port``; returns once ``/health`` answers 200."""
    command = [
        str(venv / "bin" / "gunicorn"),
        "--workers=1",
        f"--threads={THREADS}",
        "--worker-class=gthread",
        "--keep-alive=30",  # as ours: the load generator keeps its connections
        f"--bind=127.0.0.1:{port}",
        f"--control-socket={task_dir / 'gunicorn.ctl'}",  # not the shared ~/.gunicorn one
        "potato.flask_server:create_app('config.yaml')",
    ]
    env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ}
    env |= {"HOME": str(task_dir), "POTATO_NONINTERACTIVE": "1", "PYTHONUNBUFFERED": "1"}
    with log_path.open("w") as out:
        server = subprocess.Popen(command, cwd=task_dir, env=env, stdout=out, stderr=subprocess.STDOUT)
    wait_healthy(server, port, "/health", log_path, limit_s=300)
    return server


def wait_healthy(server: subprocess.Popen, port: int, path: str, log_path: Path, *, limit_s: float) -> None:
    """Until GET ``path`` answers 200 (the server exiting or ``limit_s`` passing stops the run)."""
    import http.client

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"peer server exited with {server.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", path)
            status = conn.getresponse().status
            conn.close()
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    server.kill()
    raise SystemExit(f"peer server did not answer {path} on port {port} within {limit_s:.0f} s")


class PotatoApp:
    """The rater's requests to Potato (see the module docstring)."""

    name = "potato"
    json_headers = {"Content-Type": "application/json"}

    def __init__(self, port: int):
        self.port = port

    async def login(self, rater: Rater) -> None:
        status, _, _ = await rater.conn.request("GET", f"/?user={rater.key}")
        if status != 302 or "session" not in rater.conn.cookies:
            raise SystemExit(f"potato: URL login of {rater.key} answered {status} without a session")

    async def claim(self, rater: Rater) -> str | None:
        if rater.state.get("advance"):
            status, _, payload = await rater.conn.request(
                "POST",
                "/annotate",
                body=b'{"action": "next_instance"}',
                headers=self.json_headers | {"X-Potato-Navigation": "1"},
            )
            if status == 302:  # nothing left: the rater is sent on to the end of the study
                return None
            if status != 200:
                raise ClaimError(f"next {status}")
            moved_to = json.loads(payload).get("instance_id")
            if moved_to is None or moved_to == rater.state.get("done"):
                return None  # nothing was assigned: still on the item just answered
            rater.state["advance"] = False
        status, _, payload = await rater.conn.request("GET", "/api/current_instance")
        if status != 200:
            raise ClaimError(f"current_instance {status}")
        return json.loads(payload).get("instance_id")

    async def submit(self, rater: Rater, item: str, score: float) -> bool:
        body = json.dumps(
            {"instance_id": item, "annotations": {f"{SCHEMA}:slider": f"{score:.2f}"}, "span_annotations": []}
        ).encode()
        status, _, payload = await rater.conn.request("POST", "/updateinstance", body=body, headers=self.json_headers)
        rater.state["advance"] = True
        rater.state["done"] = item
        return status == 200 and json.loads(payload).get("status") == "success"


def stored(task_dir: Path) -> dict:
    """What Potato stored: ``by_rater`` {user: items answered}, ``per_item`` {item: [answers,
    distinct users]} (one state file per user holds at most one answer per item)."""
    by_rater: dict[str, int] = {}
    per_item: dict[str, list[int]] = {}
    for state_file in sorted((task_dir / "annotation_output").glob("*/user_state.json")):
        state = json.loads(state_file.read_text())
        answered = [
            item
            for item, labels in (state.get("instance_id_to_label_to_value") or {}).items()
            if any(label.get("schema") == SCHEMA for label, _ in labels)
        ]
        by_rater[state["user_id"]] = len(answered)
        for item in answered:
            counts = per_item.setdefault(item, [0, 0])
            counts[0] += 1
            counts[1] += 1
    return {"by_rater": by_rater, "per_item": per_item}
