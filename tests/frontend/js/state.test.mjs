// The rating session's state, without a browser: clock and storage are injected.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ItemTimer,
  Outbox,
  heldPairsWaitSeconds,
  newKey,
  reconnectDelay,
  retryAfterMs,
  retryDelay,
  studyProgressText,
} from "../../../frontend/static/frontend/rate/state.js";

function clock(times) {
  const queue = [...times];
  return () => queue.shift();
}

test("the timer counts a drag once and times the first move", () => {
  // The clock is read when the pair shows, at the first move and for the facts.
  const timer = new ItemTimer(clock([1000, 1400, 3000]));
  timer.moved("pointer");
  timer.moved("drag");
  timer.moved("drag");
  timer.moved("keyboard");
  assert.deepEqual(timer.facts(), { time_on_item_ms: 2000, time_to_first_move_ms: 400, adjustments: 2 });
});

test("an untouched pair has no first move", () => {
  const timer = new ItemTimer(clock([0, 2500]));
  assert.deepEqual(timer.facts(), { time_on_item_ms: 2500, time_to_first_move_ms: null, adjustments: 0 });
});

class MemoryStorage {
  constructor() {
    this.items = new Map();
  }
  getItem(key) {
    return this.items.has(key) ? this.items.get(key) : null;
  }
  setItem(key, value) {
    this.items.set(key, String(value));
  }
}

test("the outbox keeps one submission per idempotency key until removed", () => {
  const storage = new MemoryStorage();
  const outbox = new Outbox(storage, "cxc-outbox:r:demo");
  outbox.add({ idempotency_key: "a", score: 1 });
  outbox.add({ idempotency_key: "b", score: 2 });
  outbox.add({ idempotency_key: "a", score: 3 });
  assert.deepEqual(
    new Outbox(storage, "cxc-outbox:r:demo").pending().map((s) => [s.idempotency_key, s.score]),
    [
      ["b", 2],
      ["a", 3],
    ],
  );
  outbox.remove("b");
  assert.deepEqual(outbox.pending(), [{ idempotency_key: "a", score: 3 }]);
});

test("a damaged outbox reads as empty", () => {
  const storage = new MemoryStorage();
  storage.setItem("k", "{not json");
  assert.deepEqual(new Outbox(storage, "k").pending(), []);
});

test("keys are 32 hex digits and retries back off to 15 s", () => {
  assert.match(newKey(), /^[0-9a-f]{32}$/);
  assert.deepEqual([0, 1, 2, 5, 10].map(retryDelay), [500, 1000, 2000, 15000, 15000]);
});

test("Retry-After reads as seconds or a date, and nothing else", () => {
  const now = Date.parse("Wed, 02 Dec 2026 10:00:00 GMT");
  assert.equal(retryAfterMs("5", now), 5000);
  assert.equal(retryAfterMs(" 0 ", now), 0);
  assert.equal(retryAfterMs("Wed, 02 Dec 2026 10:00:07 GMT", now), 7000);
  assert.equal(retryAfterMs("Wed, 02 Dec 2026 09:59:00 GMT", now), 0); // a date passed: at once
  assert.equal(retryAfterMs("86400", now), 300000); // followed for five minutes at most
  for (const unreadable of [null, undefined, "", "soon", "-3", "1.5"]) assert.equal(retryAfterMs(unreadable, now), null);
});

test("a retry waits the backoff or the server's Retry-After, whichever is longer, plus jitter", () => {
  const none = () => 0;
  assert.deepEqual([0, 1, 2, 3, 4, 5, 9].map((attempt) => reconnectDelay(attempt, null, none)), [500, 1000, 2000, 4000, 8000, 15000, 15000]);
  assert.equal(reconnectDelay(0, 5000, none), 5000); // the server's wait, not the first half second
  assert.equal(reconnectDelay(5, 5000, none), 15000); // the backoff once it is longer
  assert.equal(reconnectDelay(0, 5000, () => 0.999), 6249); // up to a quarter more, never less
});

test("a participant's progress reads items rated of the quota", () => {
  assert.equal(studyProgressText({ items_done: 0, quota: 4 }), "Rated 0 of 4");
  assert.equal(studyProgressText({ items_done: 3, quota: 4 }), "Rated 3 of 4");
});

test("a participant waiting for pairs others hold asks again after 3 s, doubling up to a minute", () => {
  const none = () => 0;
  assert.deepEqual([0, 1, 2, 3, 4, 5, 9].map((round) => heldPairsWaitSeconds(round, none)), [3, 6, 12, 24, 48, 60, 60]);
  // Spread by up to a fifth, so that participants waiting together do not ask together.
  assert.equal(heldPairsWaitSeconds(5, () => 0.999), 72);
});
