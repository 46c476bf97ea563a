"""The accessibility check of the browser tests (tests/support/accessibility.py) itself: it
finds a real violation, names it, and checks every page a journey visits."""

import pytest

from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("demo_allowed")]

UNLABELLED = """<!doctype html>
<html lang="en"><head><title>Batch budget</title></head>
<body><main><h1>Batch budget</h1>
<form><input type="number" name="budget"><button>Save</button></form>
</main></body></html>"""


def test_a_field_without_a_label_fails_the_check_naming_rule_page_and_element(page, accessibility, live_server):
    page.route(
        "http://forms.test/**", lambda route: route.fulfill(status=200, content_type="text/html", body=UNLABELLED)
    )
    page.goto("http://forms.test/budget")
    # The next call after the load is what checks it.
    page.goto(f"{live_server.url}/login/")

    assert accessibility.checked == ["http://forms.test/budget"]
    assert [(v.rule, v.url, v.nodes[0][0]) for v in accessibility.violations] == [
        ("label", "http://forms.test/budget", "input")
    ]
    with pytest.raises(AssertionError) as failure:
        accessibility.assert_clean()
    message = str(failure.value)
    assert "label (critical) on http://forms.test/budget: Form elements must have labels" in message
    assert "\n    input\n        Fix any of the following:" in message
    # The test has seen the failure it wanted; the login page it ends on is checked as usual.
    accessibility.violations.clear()


def test_every_page_of_a_journey_is_checked(page, accessibility, live_server, demo):
    log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/admin/")
    page.click("text=Sampling batches")
    page.wait_for_selector("#result_list")
    page.goto(f"{live_server.url}/admin/sampling/samplingbatch/create/")
    page.close()

    visited = [url for url in accessibility.visited if url != "about:blank"]
    assert len(visited) == 5, visited  # login, where it led, the admin's index, the list, the form
    assert accessibility.checked == visited
    assert accessibility.violations == []
