// The rating page's key rules, without a browser (node --test; tests/frontend/test_js_units.py runs it).
import assert from "node:assert/strict";
import { test } from "node:test";

import { Focus, enterAction } from "../../../frontend/static/frontend/rate/keys.js";

const ready = { canSubmit: true, canFlag: true };

test("Enter on the slider submits once it is set", () => {
  assert.equal(enterAction(Focus.SLIDER, ready), "submit");
  assert.equal(enterAction(Focus.SLIDER, { canSubmit: false, canFlag: true }), null);
});

test("Enter in the flag's note sends the report, never the rating", () => {
  assert.equal(enterAction(Focus.FLAG_NOTE, ready), "flag");
  assert.equal(enterAction(Focus.FLAG_NOTE, { canSubmit: true, canFlag: false }), null);
});

test("Enter anywhere else leaves the focused control its own meaning", () => {
  // Skip, Flag, the Submit button, the instructions' summary, the page itself.
  assert.equal(enterAction(Focus.OTHER, ready), null);
  assert.equal(enterAction(undefined, ready), null);
});
