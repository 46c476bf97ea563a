// Rating-session state, free of DOM code: per-item timing facts and an outbox of
// submissions that survives reloads and network failures.

/** Timing and interaction facts of the pair on screen. `now` is injectable for tests. */
export class ItemTimer {
  constructor(now = () => performance.now()) {
    this.now = now;
    this.shownAt = now();
    this.firstMoveAt = null;
    this.adjustments = 0;
  }

  /** Record one slider move (a pointer press, a drag step or a key press). */
  moved(source) {
    if (this.firstMoveAt === null) this.firstMoveAt = this.now();
    // A drag reports many positions; count the gesture once, at its press.
    if (source !== "drag") this.adjustments += 1;
  }

  facts() {
    const end = this.now();
    return {
      time_on_item_ms: Math.max(0, Math.round(end - this.shownAt)),
      time_to_first_move_ms: this.firstMoveAt === null ? null : Math.max(0, Math.round(this.firstMoveAt - this.shownAt)),
      adjustments: this.adjustments,
    };
  }
}

/**
 * Submissions waiting for the server's answer, kept in storage (localStorage in the
 * page) under one key. Each has its idempotency key, so sending it again after a
 * network failure stores it once.
 */
export class Outbox {
  constructor(storage, key) {
    this.storage = storage;
    this.key = key;
  }

  pending() {
    try {
      return JSON.parse(this.storage.getItem(this.key) || "[]");
    } catch {
      return [];
    }
  }

  add(submission) {
    const items = this.pending().filter((s) => s.idempotency_key !== submission.idempotency_key);
    items.push(submission);
    this.storage.setItem(this.key, JSON.stringify(items));
  }

  remove(idempotencyKey) {
    const items = this.pending().filter((s) => s.idempotency_key !== idempotencyKey);
    this.storage.setItem(this.key, JSON.stringify(items));
  }
}

/** A fresh idempotency key. */
export function newKey() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID().replaceAll("-", "");
  return Array.from({ length: 32 }, () => Math.floor(Math.random() * 16).toString(16)).join("");
}

/** Delay before retry number `attempt` (0-based): 0.5 s doubling up to 15 s. */
export function retryDelay(attempt) {
  return Math.min(15000, 500 * 2 ** attempt);
}

// The longest wait a Retry-After is followed to: beyond it the page asks again anyway.
const LONGEST_RETRY_AFTER_MS = 300000;

/**
 * A Retry-After header's wait in ms (delay-seconds, or an HTTP date less `nowMs`), or null
 * when the header is absent or unreadable.
 */
export function retryAfterMs(header, nowMs) {
  const text = (header ?? "").trim();
  if (/^\d+$/.test(text)) return Math.min(LONGEST_RETRY_AFTER_MS, Number(text) * 1000);
  // An HTTP date ("Wed, 02 Dec 2026 10:00:07 GMT"); Date.parse alone reads "-3" as a year.
  const when = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(when) ? null : Math.min(LONGEST_RETRY_AFTER_MS, Math.max(0, when - nowMs));
}

/**
 * The wait before retry number `attempt` (0-based) after a failure whose answer asked for
 * `retryAfter` ms (null: it did not): the backoff, never shorter than the server asked,
 * and up to a quarter longer at random (`random` in [0, 1)), so that raters cut off
 * together do not all come back in the same instant.
 */
export function reconnectDelay(attempt, retryAfter, random = Math.random) {
  const wait = Math.max(retryDelay(attempt), retryAfter ?? 0);
  return Math.round(wait * (1 + 0.25 * random()));
}

/**
 * Seconds to wait before asking again, after round `round` (0-based) of a participant's
 * wait for pairs others hold: 3 s doubling up to a minute, and up to a fifth longer at
 * random (`random` in [0, 1)) so that participants waiting together do not ask together.
 * A lease lasts minutes; asking every few seconds would find nothing sooner.
 */
export function heldPairsWaitSeconds(round, random = Math.random) {
  const wait = Math.min(60, 3 * 2 ** round);
  return Math.round(wait * (1 + 0.2 * random()));
}

/** A study participant's progress line: items rated of the quota, gold items included. */
export function studyProgressText({ items_done: done, quota }) {
  return `Rated ${done} of ${quota}`;
}
