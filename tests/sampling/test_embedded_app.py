"""The app as `make run` starts it (embedded mode: SQLite, tasks in-process): an admin
creates and runs a sampling batch from the admin on real COCO photos and captions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import requests

from tests.support.web_server import free_port

pytestmark = pytest.mark.slow

REPO_DIR = Path(__file__).resolve().parents[2]
PORTS = range(8111, 8120)


@pytest.fixture
def embedded_env(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(
        {
            "RUN_MODE": "embedded",
            "VAR_DIR": str(tmp_path / "var"),
            "CELERY_TASK_ALWAYS_EAGER": "true",
            "DJANGO_SUPERUSER_PASSWORD": "admin-pw-for-tests",
        }
    )
    return env


def manage(env, *args) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def write_space(folder: Path, name: str, keys: list[str], seed: int) -> tuple[Path, Path]:
    vectors = np.random.default_rng(seed).standard_normal((len(keys), 32)).astype(np.float32)
    np.save(folder / f"{name}.npy", vectors)
    (folder / f"{name}.txt").write_text("".join(f"{key}\n" for key in keys), encoding="utf-8")
    return folder / f"{name}.npy", folder / f"{name}.txt"


def test_an_admin_creates_and_runs_a_batch_in_the_embedded_app(coco_mini, embedded_env, tmp_path):
    env = embedded_env
    manage(env, "migrate", "--no-input", "-v", "0")
    manage(
        env, "import_karpathy", str(coco_mini / "dataset.json"), "--name", "demo",
        "--images-root", str(coco_mini), "--key-prefix", "COCO_val2014",
    )  # fmt: skip
    data = json.loads((coco_mini / "dataset.json").read_text(encoding="utf-8"))
    image_keys = [f"COCO_val2014_{image['cocoid']:012d}.jpg" for image in data["images"]]
    caption_keys = [f"COCO_val2014:sentid:{s['sentid']}" for image in data["images"] for s in image["sentences"]]
    for name, modality, keys, seed in (("img", "image", image_keys, 1), ("txt", "caption", caption_keys, 2)):
        vectors, ids = write_space(tmp_path, name, keys, seed)
        manage(env, "import_embeddings", "--dataset", "demo", "--space", name, "--modality", modality,
               "--vectors", str(vectors), "--ids", str(ids))  # fmt: skip
    manage(env, "createsuperuser", "--no-input", "--username", "admin", "--email", "admin@example.org")

    port = free_port(PORTS)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=REPO_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        web = requests.Session()
        deadline = time.monotonic() + 60
        while True:
            try:
                login = web.get(f"{base}/admin/login/", timeout=5)
                break
            except requests.ConnectionError:
                assert server.poll() is None and time.monotonic() < deadline, "the app did not start"
                time.sleep(0.2)
        web.post(
            f"{base}/admin/login/?next=/admin/",
            data={"username": "admin", "password": "admin-pw-for-tests", "csrfmiddlewaretoken": csrf(login.text)},
            timeout=30,
        )
        form = web.get(f"{base}/admin/sampling/samplingbatch/create/", timeout=30)
        assert form.status_code == 200
        assert "0 ready: SIS 0 of 0 rated, STS 0 of 0 rated" in form.text
        split_id = re.search(r'<option value="(\d+)">demo / mini</option>', form.text).group(1)
        listing = web.post(
            f"{base}/admin/sampling/samplingbatch/create/",
            data={
                "csrfmiddlewaretoken": csrf(form.text),
                "split": split_id,
                "use_i2i_csim": "on",
                "use_c2c_isim": "on",
                "use_c2c_cocaption": "on",
                "budget_c2c_cocaption": "170",
                "use_c2i_original": "on",
                "k": "5",
                "ratings_per_pair": "5",
                "seed": "0",
                "priority": "0",
                "start": "on",
            },
            timeout=120,
        )
        assert listing.url.endswith("/admin/sampling/samplingbatch/")
        assert "succeeded" in listing.text
        assert "c2c_cocaption: 170<br>c2i_original: 850" in listing.text
        assert re.search(r"done: \d+ pairs", listing.text)
    finally:
        server.terminate()
        server.wait(timeout=30)
    out = manage(env, "sample", "--dataset", "demo", "--split", "mini", "--method", "c2c_cocaption=30")
    assert "c2c_cocaption: 30" in out


def csrf(page: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
