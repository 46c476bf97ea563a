// The rater API, as the rating page uses it. Every call resolves to {status, body};
// network failures reject with NetworkError so callers can keep work and retry.
import { retryAfterMs } from "./state.js";

/** No answer, or a 5xx: `status` is the answer's (null: none came) and `retryAfterMs` the
 * wait its Retry-After asked for (null: none; the server sends one with 503 while its
 * database does not answer). */
export class NetworkError extends Error {
  constructor(message, { status = null, retryAfterMs = null } = {}) {
    super(message);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

export async function call(method, url, body) {
  let response;
  try {
    response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: {
        Accept: "application/json",
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...(method === "GET" ? {} : { "X-CSRFToken": csrfToken() }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new NetworkError(String(error));
  }
  // A proxy or a dropped connection can answer with a 5xx page: treat it as a network
  // failure so the work is kept and retried, never dropped.
  if (response.status >= 500) {
    throw new NetworkError(`server answered ${response.status}`, {
      status: response.status,
      retryAfterMs: retryAfterMs(response.headers.get("Retry-After"), Date.now()),
    });
  }
  let payload = null;
  if (response.status !== 204) {
    try {
      payload = await response.json();
    } catch {
      payload = null;
    }
  }
  return { status: response.status, body: payload };
}

// The claim and the submit answer with the rater's progress too, so the page asks for it
// only when no pair came (204 has no body).
const timeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

export function rateApi(base) {
  return {
    claim: (kind) => call("POST", `${base}claim/`, { kind, progress_tz: timeZone() }),
    heartbeat: (slotId) => call("POST", `${base}slots/${slotId}/heartbeat/`),
    submit: (submission) =>
      call("POST", `${base}slots/${submission.slot_id}/submit/`, {
        score: submission.score,
        time_on_item_ms: submission.time_on_item_ms,
        time_to_first_move_ms: submission.time_to_first_move_ms,
        adjustments: submission.adjustments,
        idempotency_key: submission.idempotency_key,
        claim_next_kind: submission.kind,
        progress_tz: timeZone(),
      }),
    skip: (slotId) => call("POST", `${base}slots/${slotId}/skip/`),
    flag: (slotId, reason, note) => call("POST", `${base}slots/${slotId}/flag/`, { reason, note }),
    progress: () => call("GET", `${base}progress/?tz=${encodeURIComponent(timeZone())}`),
  };
}
