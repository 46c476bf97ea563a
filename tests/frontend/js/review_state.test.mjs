// The failure review's state (frontend/static/frontend/rate/review_state.js): the marks'
// rule that a fair alternative stands alone, and the submission's timings.
import assert from "node:assert/strict";
import { test } from "node:test";

import { FAIR_ALTERNATIVE, reviewSubmission, toggleMark } from "../../../frontend/static/frontend/rate/review_state.js";

test("ticking marks adds them; unticking removes one", () => {
  let marks = toggleMark([], "object_class", true);
  marks = toggleMark(marks, "size", true);
  assert.deepEqual(marks, ["object_class", "size"]);
  assert.deepEqual(toggleMark(marks, "object_class", false), ["size"]);
  assert.deepEqual(toggleMark(marks, "size", true), ["object_class", "size"]);
});

test("a fair alternative clears the misreadings, and a misreading clears it", () => {
  const fair = toggleMark(["object_class", "action"], FAIR_ALTERNATIVE, true);
  assert.deepEqual(fair, [FAIR_ALTERNATIVE]);
  assert.deepEqual(toggleMark(fair, "details", true), ["details"]);
});

test("the submission measures from the review shown, the first move never after the submit", () => {
  const body = reviewSubmission({ score: 2.5, marks: ["size"], shownAt: 1000, firstMoveAt: 1500.4, adjustments: 3, key: "k", now: 4000 });
  assert.deepEqual(body, { score: 2.5, marks: ["size"], time_on_item_ms: 3000, time_to_first_move_ms: 500, adjustments: 3, idempotency_key: "k" });
  assert.equal(reviewSubmission({ score: 0, marks: [], shownAt: 0, firstMoveAt: null, adjustments: 0, key: "k", now: 10 }).time_to_first_move_ms, null);
});
