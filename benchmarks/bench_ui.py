"""Rate 50 pairs in headless Chromium against the web server + PostgreSQL, and time each
submit until the next pair is ready to rate (shown, its pictures decoded, slider ready).

The page itself measures it (performance.measure "submit-to-ready", from the submit
press to the next pair being ready). Last line: {"p50_ms", "p95_ms", ...}.

Environment: BENCH_UI_SUBMISSIONS (50; 6 under BENCH_SMOKE=1), BENCH_UI_PORT (8151),
BENCH_DATABASE (cxc_bench_ui), CHROMIUM_PATH (/usr/bin/chromium).
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

from _common import (
    env_database,
    env_number,
    fresh_database,
    print_figures,
    setup_django,
    sized,
    start_web_server,
    stop_server,
)

DATABASE = env_database("cxc_bench_ui")
PORT = env_number("BENCH_UI_PORT", 8151, minimum=1024)
SUBMISSIONS = sized("BENCH_UI_SUBMISSIONS", 50, 6)
CHROMIUM = os.environ.get("CHROMIUM_PATH") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    var_dir = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    database_url = fresh_database(DATABASE)
    env = {"VAR_DIR": str(var_dir), "DATA_DIR": str(var_dir / "data"), "DEBUG": "false"}
    setup_django(database_url, **env)
    from django.core.management import call_command

    from tests.frontend.rating_setup import demo_with_pairs

    call_command("collectstatic", interactive=False, verbosity=0)
    demo_with_pairs(per_kind=SUBMISSIONS)  # one kind alone could fill the run

    server_env = {**os.environ, **env, "ALLOWED_HOSTS": "127.0.0.1"}
    server = start_web_server(server_env, PORT, var_dir / "web.log", port_setting="BENCH_UI_PORT")
    try:
        durations, kinds = run_browser(f"http://127.0.0.1:{PORT}")
    finally:
        stop_server(server)
    rounded = sorted(round(d) for d in durations)
    print(f"{len(durations)} submissions ({kinds}); submit -> next pair ready, ms: {rounded}")
    print_figures(
        {
            "p50_ms": round(percentile(durations, 0.50), 1),
            "p95_ms": round(percentile(durations, 0.95), 1),
            "max_ms": round(max(durations), 1),
            "submissions": len(durations),
        }
    )


def run_browser(base: str) -> tuple[list[float], dict[str, int]]:
    from playwright.sync_api import sync_playwright

    rng = random.Random(0)
    plan = ["sts", "sis", "sits"]
    counts = {kind: 0 for kind in plan}
    durations: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base}/login/?next=/rate/")
        page.fill("input[name=username]", "rater1")
        page.fill("input[name=password]", "rater-demo-pass")
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/rate/")
        per_kind = [SUBMISSIONS // 3 + (1 if i < SUBMISSIONS % 3 else 0) for i in range(3)]
        for kind, n in zip(plan, per_kind, strict=True):
            page.goto(f"{base}/rate/demo/{kind}/")
            page.wait_for_selector("#pair[data-ready]")
            for _ in range(n):
                current = page.get_attribute("#pair", "data-ready")
                box = page.locator(".scale-track").bounding_box()
                page.mouse.click(box["x"] + box["width"] * rng.uniform(0.02, 0.98), box["y"] + box["height"] / 2)
                page.keyboard.press("Enter")
                page.wait_for_selector(f"#pair[data-ready]:not([data-ready='{current}'])", timeout=10000)
                counts[kind] += 1
            durations += page.evaluate(
                "() => performance.getEntriesByName('submit-to-ready').map(entry => entry.duration)"
            )
        browser.close()
    return durations, counts


if __name__ == "__main__":
    main()
