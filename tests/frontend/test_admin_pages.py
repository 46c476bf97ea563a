"""The admin's batch list and pair page as a person sees them, in Chromium at 1280 px."""

import re

import pytest

from annotation.models import Flag, FlagReason, Pair
from sampling.models import SamplingBatch
from tests.frontend.rating_setup import demo_with_pairs, rater
from tests.support.browser import session_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]


def test_the_batch_list_fits_1280_px_and_a_flagged_pair_shows_its_pictures(page, live_server, screenshot_dir):
    demo_with_pairs(per_kind=4)
    sis = Pair.objects.filter(kind="SIS").first()
    Flag.objects.create(pair=sis, rater=rater(), reason=FlagReason.BROKEN_IMAGE)
    session_for(page, live_server, username="admin")

    page.goto(f"{live_server.url}/admin/sampling/samplingbatch/")
    page.wait_for_selector("#result_list")
    page.screenshot(path=screenshot_dir / "admin-batch-list-1280.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert page.evaluate("document.querySelector('#changelist .results').scrollWidth") <= page.evaluate(
        "document.querySelector('#changelist .results').clientWidth"
    )
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == SamplingBatch.objects.count() == 2
    for row in range(rows.count()):
        assert re.search(r"\d+ of \d+ pairs\n\d+ of \d+ ratings", rows.nth(row).inner_text())

    page.goto(f"{live_server.url}/admin/annotation/flag/")
    page.wait_for_selector("#result_list figure img")
    page.screenshot(path=screenshot_dir / "admin-flag-list.png", full_page=True)
    assert page.evaluate("document.querySelector('#changelist .results').scrollWidth") <= page.evaluate(
        "document.querySelector('#changelist .results').clientWidth"
    )
    pictures = page.locator("#result_list figure img")
    assert pictures.count() == 2
    # The pictures really load (the image view serves the demo's files to the admin).
    assert page.evaluate("[...document.querySelectorAll('#result_list figure img')].every(i => i.naturalWidth > 0)")


def test_raters_added_from_a_csv_in_the_admin_see_their_links(page, live_server, screenshot_dir, tmp_path):
    demo_with_pairs(per_kind=1)
    session_for(page, live_server, username="admin")
    page.goto(f"{live_server.url}/admin/auth/user/")
    page.click("text=Add raters from CSV")
    rater_list = tmp_path / "raters.csv"
    rater_list.write_text("username,email,kinds\nnew_rater_1,one@example.org,STS SIS\nnew_rater_2,,SITS\n")
    page.set_input_files("input[name=file]", str(rater_list))
    page.click("input[type=submit]")
    page.wait_for_selector("#invited")
    page.screenshot(path=screenshot_dir / "admin-add-raters.png", full_page=True)
    links = page.locator("#invited code").all_inner_texts()
    assert len(links) == 2 and all("/invite/" in link for link in links)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_a_phase_two_batch_page_shows_the_rule_and_skips_it_recorded(page, live_server, screenshot_dir):
    from sampling.runs.batch import sampling_batch_run
    from sampling.services import sampling_batch_create
    from tests.support.rating_support import rate_pair

    dataset = demo_with_pairs(per_kind=4, ratings_per_pair=1)
    for number, pivot in enumerate(Pair.objects.filter(dataset=dataset, kind__in=["SIS", "STS"]).order_by("id")):
        rate_pair(pivot, [min(5.0, 1.0 + number / 2)])
    batch = sampling_batch_create(
        dataset_name="demo", split_name=dataset.splits.get().name, methods={"c2i_intrasim": None}
    )
    batch = sampling_batch_run(batch_id=batch.pk)
    assert batch.status == "succeeded", batch.error
    session_for(page, live_server, username="admin")

    page.goto(f"{live_server.url}/admin/sampling/samplingbatch/{batch.pk}/change/")
    page.wait_for_selector("#content")
    page.screenshot(path=screenshot_dir / "admin-batch-c2i-intrasim.png", full_page=True)
    text = page.locator("#content").inner_text()
    assert "one_per_pivot" in text and "skipped_taken_by_sts" in text and "lowest_score_taken" in text
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # The rule as a table: a row per count, a column per half.
    rule = page.locator(".field-phase_two_rule")
    assert "rule: one_per_pivot" in rule.inner_text()
    assert "skipped: the STS half took it" in rule.inner_text()
    report = batch.stats["c2i_intrasim"]
    taken = rule.locator("tr", has_text="pairs taken").locator("td")
    assert [taken.nth(0).inner_text(), taken.nth(1).inner_text()] == [
        str(report["sts"]["taken"]),
        str(report["sis"]["taken"]),
    ]
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=screenshot_dir / "admin-batch-c2i-intrasim-390.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

    page.goto(f"{live_server.url}/admin/sampling/samplingbatch/create/")
    page.wait_for_selector("form[enctype]")
    assert "one caption-image pair per fully rated SIS/STS pivot" in page.locator("form[enctype]").inner_text()


def test_a_batch_searching_in_a_chord_shows_its_shards_on_its_page(page, live_server, screenshot_dir):
    from datetime import timedelta

    from django.utils import timezone

    from sampling.models import SamplingShard
    from sampling.services import sampling_batch_create

    dataset = demo_with_pairs(per_kind=1)
    batch = sampling_batch_create(dataset_name="demo", split_name=dataset.splits.get().name, methods={"c2c_isim": 10})
    now = timezone.now()
    SamplingBatch.objects.filter(pk=batch.pk).update(
        status="running",
        runner="chord:worker-a:41",
        started_at=now - timedelta(seconds=90),
        progress_done=7,
        progress_total=10,
        progress_message="searching in a chord: 6 of 8 shards done",
        stats={"chord": {"mode": "chord", "shards": {"assign": 4, "search": 4}, "shard_rows": 262144}},
    )
    for stage, done in (("assign", 4), ("search", 2)):
        for number in range(4):
            finished = number < done
            SamplingShard.objects.create(
                batch=batch,
                space="img",
                stage=stage,
                number=number,
                row_start=number * 10,
                row_stop=number * 10 + 10,
                attempts=2 if (stage, number) == ("search", 1) else 1,
                worker=f"worker-{'ab'[number % 2]}:{40 + number}",
                started_at=now,
                finished_at=now if finished else None,
                seconds=12.5 + number if finished else None,
                peak_rss_mib=(900 if stage == "assign" else 2_100) + number if finished else None,
            )
    session_for(page, live_server, username="admin")
    page.goto(f"{live_server.url}/admin/sampling/samplingbatch/{batch.pk}/change/")
    page.wait_for_selector(".field-search_shards")
    page.screenshot(path=screenshot_dir / "admin-batch-chord.png", full_page=True)
    shards = page.locator(".field-search_shards").inner_text()
    assert "assign shards: 4 of 4 done, slowest 15.5 s, peak memory 903 MiB" in shards
    assert "search shards: 2 of 4 done, 1 retried, slowest 13.5 s, peak memory 2,101 MiB" in shards
    assert "worker hosts: worker-a, worker-b" in shards
    assert "searching in a chord: 6 of 8 shards done" in page.locator("#content").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_the_admin_forms_name_every_field_at_a_laptop_and_a_phone(page, live_server, screenshot_dir, accessibility):
    """A link with its questions, a data set with its speed floors, a rater with their
    qualifications, a new batch, an import of object annotations: every field has a name
    (the inline rows' too), checked by axe-core at 1280x800 and at 390x844 (each
    screenshot is checked)."""
    from annotation.models import SpeedFloor
    from annotation.people.crowd.questions import study_question_add
    from tests.frontend.crowd_setup import crowd_link

    dataset = demo_with_pairs(per_kind=1)
    link = crowd_link(dataset, kinds=("SIS",), quota=4, expires_at=None)
    study_question_add(link, phase="pre", prompt="How often do you look at photos online?", answer_type="choice",
                       options=["Daily", "Weekly", "Rarely"], required=True)  # fmt: skip
    study_question_add(link, phase="post", prompt="Was anything unclear?")
    SpeedFloor.objects.create(dataset=dataset, kind="SIS", seconds=2.0)
    forms = {
        "link": f"/admin/annotation/campaignlink/{link.pk}/change/",
        "dataset": f"/admin/annotation/dataset/{dataset.pk}/change/",
        "rater": f"/admin/auth/user/{rater().pk}/change/",
        "batch": "/admin/sampling/samplingbatch/create/",
        "objects": "/admin/annotation/dataset/import-objects/",
    }
    session_for(page, live_server, username="admin")
    for name, path in forms.items():
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(live_server.url + path)
        page.screenshot(path=screenshot_dir / f"admin-form-{name}-1280.png", full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=screenshot_dir / f"admin-form-{name}-390.png", full_page=True)
        if name == "link":
            prompts = {page.get_by_label(f"Prompt, study question {row}").input_value() for row in (1, 2)}
            assert prompts == {"How often do you look at photos online?", "Was anything unclear?"}
            assert page.get_by_label("Delete, study question 1").count() == 1
            assert page.get_by_label("Time:").count() == 1  # the expiry's second input
        if name == "batch":
            assert page.get_by_label("budget of i2i_csim", exact=False).count() == 1
    assert len(set(accessibility.checked)) == len(forms) and accessibility.violations == []
