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

/** A study participant's progress line: items rated of the quota, gold items included. */
export function studyProgressText({ items_done: done, quota }) {
  return `Rated ${done} of ${quota}`;
}
