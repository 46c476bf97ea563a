"""The serving mechanism's tests run with serving's per-process memories off
(SERVING_PROCESS_MEMORY=false): the mechanism's every answer must stand without them.
The tests elsewhere (the policy's, the API's, the pages') serve with them on, as
production does, and those that count the statements they spare (marker
statement_count) keep them on wherever they are."""

import pytest


@pytest.fixture(autouse=True)
def _serving_without_process_memory(request, settings):
    if not request.node.get_closest_marker("statement_count"):
        settings.SERVING_PROCESS_MEMORY = False
