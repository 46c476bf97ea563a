"""The front end's pure ES modules (state.js, keys.js, review_state.js), tested under Node without a
browser: tests/frontend/js/*.test.mjs, run by ``node --test``."""

import shutil
import subprocess

from tests.conftest import REPO_DIR, skip_or_fail

JS_TESTS = REPO_DIR / "tests" / "frontend" / "js"


def test_js_unit_tests_pass():
    node = shutil.which("node")
    if node is None:
        skip_or_fail("node is not installed (apt-get install nodejs)")
    # The modules are plain .js ES modules with no package.json: Node detects that they are modules.
    result = subprocess.run(
        [node, "--experimental-detect-module", "--test", *sorted(str(p) for p in JS_TESTS.glob("*.test.mjs"))],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "# fail 0" in result.stdout
