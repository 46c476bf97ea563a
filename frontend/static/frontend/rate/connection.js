// The rating page's line about its connection to the server, while requests fail and are
// tried again ("Connection to the server lost; retrying in 4 s"), and once it is back.
// The line is a polite live region: screen readers hear it when the connection is lost
// and when it returns; the countdown's ticks (aria-live="off") are not read out each second.
import { reconnectDelay } from "./state.js";

const SHOWN_AFTER_RESTORE_MS = 5000;

/** The wait's opening words for a failure: a 500 is the server's own failure; no answer,
 * a 503 (the database is restarting) or a proxy's 502/504 is a lost connection. */
function lostText(error) {
  return error.status === 500 ? "The server failed to answer; retrying " : "Connection to the server lost; retrying ";
}

export function connectionLine(element) {
  const lead = document.createElement("span");
  const count = document.createElement("span");
  count.setAttribute("aria-live", "off");
  const tail = document.createElement("span");
  element.replaceChildren(lead, count, tail);
  let hideTimer = null;

  function show(leadText, countText, tailText, kind) {
    window.clearTimeout(hideTimer);
    if (lead.textContent !== leadText) lead.textContent = leadText;
    count.textContent = countText;
    if (tail.textContent !== tailText) tail.textContent = tailText;
    element.className = `notice connection ${kind}`;
    element.hidden = false;
  }

  return {
    /** Show the failure and count down to the next try, number `attempt` (0-based);
     * resolves when it is due (at once when the browser comes back online). `keeping`:
     * a rating waits in the page for it. */
    wait(error, attempt, { keeping = false } = {}) {
      const delay = reconnectDelay(attempt, error.retryAfterMs);
      const tailText = keeping ? ". Your rating is kept in this page until it is sent." : ".";
      const due = Date.now() + delay;
      return new Promise((resolve) => {
        let ticker = null;
        let finished = false;
        const done = () => {
          if (finished) return;
          finished = true;
          window.clearInterval(ticker);
          window.removeEventListener("online", done);
          show(lostText(error), "now", tailText, "waiting");
          resolve();
        };
        const tick = () => {
          const left = Math.ceil((due - Date.now()) / 1000);
          if (left <= 0) done();
          else show(lostText(error), `in ${left} s`, tailText, "waiting");
        };
        tick();
        ticker = window.setInterval(tick, 250);
        window.setTimeout(done, delay);
        window.addEventListener("online", done, { once: true });
      });
    },

    /** The server answered again after a failure: say so for a moment. */
    restored(text = "") {
      show("Connection restored", "", text ? `; ${text}` : ".", "restored");
      hideTimer = window.setTimeout(() => {
        element.hidden = true;
      }, SHOWN_AFTER_RESTORE_MS);
    },
  };
}
