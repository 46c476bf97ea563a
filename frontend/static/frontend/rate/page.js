// The rating page: wires the API, the slider and the session state to the DOM.
import { NetworkError, rateApi } from "./api.js";
import { connectionLine } from "./connection.js";
import { itemNode, showNoticeIn } from "./items.js";
import { Focus, enterAction } from "./keys.js";
import { createSlider } from "./slider.js";
import { ItemTimer, Outbox, heldPairsWaitSeconds, newKey, studyProgressText } from "./state.js";

const config = JSON.parse(document.getElementById("rate-config").textContent);
const api = rateApi(config.api_base);
const outbox = new Outbox(window.localStorage, `cxc-outbox:${config.user}:${config.dataset}`);

const el = {
  instructions: document.getElementById("instructions"),
  pair: document.getElementById("pair"),
  scale: document.getElementById("scale"),
  submit: document.getElementById("submit"),
  skip: document.getElementById("skip"),
  flagReason: document.getElementById("flag-reason"),
  flagNoteField: document.getElementById("flag-note-field"),
  flagNote: document.getElementById("flag-note"),
  flag: document.getElementById("flag"),
  progress: document.getElementById("progress"),
  notice: document.getElementById("notice"),
  work: document.getElementById("work"),
  state: document.getElementById("state"),
  otherWork: document.getElementById("other-work"),
  waiting: document.getElementById("waiting"),
  waitingCount: document.getElementById("waiting-count"),
  checkNow: document.getElementById("check-now"),
};
// While the server cannot be reached (or answers 503 while its database restarts): the
// countdown to the next try, the rating on screen and in the outbox kept meanwhile.
const connection = connectionLine(document.getElementById("connection"));

// Refusals that mean "go on through your study's link" for a crowd participant.
const STUDY_STEP_CODES = new Set(["quota_reached", "consent_required", "questions_first", "study_ended"]);

let assignment = null;
let timer = null;
let heartbeat = null;
let busy = false;
let otherWorkOffered = false;

const slider = createSlider(el.scale, {
  kind: config.kind,
  levels: config.levels,
  onChange(_value, source) {
    timer?.moved(source);
    updateControls();
  },
});

// --- instructions: open on the first visit, collapsed once the rater has seen them -------
// On a phone, open instructions would push the pair a screen or two down: there they start
// collapsed, their summary naming the task, and open with a tap.
const seenKey = `cxc-instructions-seen:${config.user}:${config.kind}`;
const smallScreen = window.matchMedia("(max-width: 700px)").matches;
el.instructions.open = !smallScreen && !window.localStorage.getItem(seenKey);
window.localStorage.setItem(seenKey, "1");

// --- rendering -----------------------------------------------------------------------------
function showNotice(text, kind = "info") {
  showNoticeIn(el.notice, text, kind);
}

function showNoWork() {
  // A crowd participant goes on through their campaign link (next task or their code),
  // unless the pairs left for them are only held by others just now.
  if (config.next_url) {
    waitForHeldPairs();
    return;
  }
  showState("No work left", "Every pair of this task is rated or held by someone. Thank you! Check back later.", {
    offerOtherWork: true,
  });
  refreshProgress();
}

/** Links to the rater's other tasks on this dataset that still have pairs for them. */
function showOtherWork(pairsLeftByKind) {
  const open = config.other_tasks.filter((task) => (pairsLeftByKind[task.kind] ?? 0) > 0);
  const links = open.map((task) => {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = task.url;
    link.textContent = task.title;
    item.append(link);
    return item;
  });
  el.otherWork.querySelector("ul").replaceChildren(...links);
  el.otherWork.hidden = !otherWorkOffered || links.length === 0;
}

function showState(title, text, { offerOtherWork = false } = {}) {
  assignment = null;
  el.waiting.hidden = true;
  otherWorkOffered = offerOtherWork;
  el.otherWork.hidden = true;
  stopHeartbeat();
  el.work.hidden = true;
  el.state.hidden = false;
  el.state.querySelector("h2").textContent = title;
  el.state.querySelector("p").textContent = text;
}

async function render(next) {
  assignment = next;
  waitRound = 0;
  el.waiting.hidden = true;
  el.state.hidden = true;
  el.work.hidden = false;
  const nodes = next.items.map(itemNode);
  el.pair.replaceChildren(...nodes);
  slider.reset();
  // Time on item runs from the pair being put on screen; a move made while a picture is
  // still decoding counts too.
  timer = new ItemTimer();
  updateControls();
  startHeartbeat(next);
  // Ready to rate once the pictures are decoded (captions are ready at once).
  await Promise.all(
    [...el.pair.querySelectorAll("img")].map((img) => img.decode().catch(() => undefined)),
  );
  if (assignment === next) {
    el.pair.dataset.ready = String(next.slot_id);
    performance.mark("pair-ready");
    if (performance.getEntriesByName("pair-submit").length) {
      performance.measure("submit-to-ready", "pair-submit", "pair-ready");
      performance.clearMarks("pair-submit");
    }
    slider.focus();
  }
}

function updateControls() {
  const hasPair = assignment !== null && !busy;
  el.submit.disabled = !hasPair || slider.value === null;
  el.skip.disabled = !hasPair;
  el.flag.disabled = !hasPair || !el.flagReason.value;
  el.flagNoteField.hidden = !el.flagReason.value;
}

function clearFlagForm() {
  el.flagReason.value = "";
  el.flagNote.value = "";
  el.flagNote.removeAttribute("aria-invalid");
  updateControls();
}

/** A flag's reason and note, or null (with the problem shown) when "other" has no note:
 * the admins cannot act on "other" without being told what is wrong. */
function flagInput() {
  const reason = el.flagReason.value;
  const note = el.flagNote.value.trim();
  if (reason === "other" && !note) {
    el.flagNote.setAttribute("aria-invalid", "true");
    showNotice("Write in the note what is wrong with this pair: a report with reason “other” needs one.", "error");
    el.flagNote.focus();
    return null;
  }
  return { reason, note };
}

// --- a participant's wait for pairs others hold ------------------------------------------
// No pair came, yet pairs are left for the participant: other raters hold them (their
// leases end when they submit, skip or leave). The page waits here and asks again after
// a growing pause; going through the link would only send them back here, once a second,
// until those leases ended.
let waitRound = 0;

/** This kind's pairs left for the participant (held ones included); null: unknown. */
async function pairsLeftHere() {
  try {
    const answer = await api.progress();
    if (answer.status !== 200) return null;
    showProgress(answer.body);
    return answer.body.pairs_left_by_kind?.[config.kind] ?? 0;
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
    return null;
  }
}

async function waitForHeldPairs() {
  if ((await pairsLeftHere()) === 0) {
    window.location.assign(config.next_url);
    return;
  }
  const seconds = heldPairsWaitSeconds(waitRound);
  waitRound += 1;
  showState(
    "Pairs are being rated by others",
    "The pairs left for you are being rated by other people just now. Keep this page open: the next pair " +
      "shows here as soon as one is free, and your study goes on by itself when none is left.",
  );
  el.waiting.hidden = false;
  await countdown(seconds);
  await claimNext();
}

/** Count down `seconds` on the waiting line; resolves when due or on "Check now". */
function countdown(seconds) {
  return new Promise((resolve) => {
    const due = Date.now() + seconds * 1000;
    let ticker = null;
    const done = () => {
      window.clearInterval(ticker);
      el.checkNow.removeEventListener("click", done);
      el.waitingCount.textContent = "Checking now…";
      resolve();
    };
    const tick = () => {
      const left = Math.ceil((due - Date.now()) / 1000);
      if (left <= 0) done();
      else el.waitingCount.textContent = `Checking again in ${left} s.`;
    };
    tick();
    ticker = window.setInterval(tick, 250);
    el.checkNow.addEventListener("click", done, { once: true });
  });
}

// --- lease heartbeat -------------------------------------------------------------------
function startHeartbeat(current) {
  stopHeartbeat();
  heartbeat = window.setInterval(async () => {
    if (document.hidden || assignment !== current) return;
    try {
      const answer = await api.heartbeat(current.slot_id);
      if (answer.status === 409 || answer.status === 404) {
        showNotice("This pair was given to someone else while the page was idle; loading another.");
        claimNext();
      }
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
    }
  }, current.heartbeat_seconds * 1000);
}

function stopHeartbeat() {
  if (heartbeat !== null) window.clearInterval(heartbeat);
  heartbeat = null;
}

// --- answers that end the session ------------------------------------------------------
function sessionEnded(answer) {
  return answer.status === 401 || (answer.status === 403 && /credentials|authenticat/i.test(answer.body?.detail || ""));
}

function handleAuth(answer) {
  if (sessionEnded(answer)) {
    showState("Your session has ended", "Log in again to continue rating. Nothing you submitted is lost.");
    document.getElementById("login-again").hidden = false;
    return true;
  }
  if (answer.status === 403 && STUDY_STEP_CODES.has(answer.body?.code)) {
    // The participant rated their quota, or owes a step of the study (consent, questions)
    // or left it: the campaign link shows where they are.
    window.location.assign(config.next_url || window.location.href);
    return true;
  }
  if (answer.status === 403 && answer.body?.code === "rater_paused") {
    // The server shows the pause page in place of the rating page.
    window.location.reload();
    return true;
  }
  if (answer.status === 403) {
    showState("Not qualified for this task", answer.body?.detail || "Ask an admin to qualify you for this task kind.");
    return true;
  }
  return false;
}

// --- claim, submit, skip, flag ---------------------------------------------------------
/** Claim the next pair, trying again with backoff while the server cannot answer;
 * `attempt` counts the tries that failed so far. */
async function claimNext(attempt = 0) {
  let answer;
  try {
    answer = await api.claim(config.kind);
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
    await connection.wait(error, attempt);
    await claimNext(attempt + 1);
    return;
  }
  if (attempt > 0) connection.restored();
  if (handleAuth(answer)) return;
  if (answer.status === 204) {
    showNoWork();
  } else if (answer.status === 200) {
    if (answer.body.progress) showProgress(answer.body.progress);
    await render(answer.body);
  } else {
    showNotice(answer.body?.detail || `Could not load a pair (${answer.status}).`, "error");
  }
}

/** Send one stored submission until the server answers; returns the server's answer.
 * While it cannot answer, the submission is sent again, with the same idempotency key
 * (stored once however often it arrives), after a backoff that honours the answer's
 * Retry-After. It leaves the outbox once the server has decided on it; a submission
 * refused because the session ended stays, and is sent when the page is opened again
 * after logging in. */
async function deliver(submission) {
  for (let attempt = 0; ; attempt += 1) {
    try {
      const answer = await api.submit(submission);
      if (!sessionEnded(answer)) outbox.remove(submission.idempotency_key);
      if (attempt > 0) connection.restored(answer.status < 300 ? "your rating was stored." : "");
      return answer;
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
      await connection.wait(error, attempt, { keeping: true });
    }
  }
}

async function submit() {
  if (!assignment || slider.value === null || busy) return;
  busy = true;
  updateControls();
  performance.mark("pair-submit");
  const submission = {
    slot_id: assignment.slot_id,
    kind: config.kind,
    score: slider.value,
    idempotency_key: newKey(),
    ...timer.facts(),
  };
  outbox.add(submission);
  stopHeartbeat();
  const answer = await deliver(submission);
  busy = false;
  if (handleAuth(answer)) return;
  if (answer.status === 201 || answer.status === 200) {
    // A notice about an earlier pair (its report was sent, a skip failed) is stale now.
    showNotice("");
    if (answer.body.progress) showProgress(answer.body.progress);
    // The submit claimed the next pair too (claim_next_kind): null when none is left or
    // the rater was paused meanwhile; a claim then tells which.
    if (answer.body.next) await render(answer.body.next);
    else await claimNext();
  } else {
    showNotice(answer.body?.detail || `Your rating was not stored (${answer.status}).`, "error");
    await claimNext();
  }
}

async function passOn(action) {
  if (!assignment || busy) return;
  const flag = action === "flag" ? flagInput() : null;
  if (action === "flag" && flag === null) return;
  // The button pressed is disabled while the server answers, which takes the focus from
  // it: a failed attempt gives the focus back there; the next pair gives it to the slider.
  const returnFocusTo = document.activeElement;
  busy = true;
  updateControls();
  try {
    const answer =
      action === "skip" ? await api.skip(assignment.slot_id) : await api.flag(assignment.slot_id, flag.reason, flag.note);
    if (handleAuth(answer)) return;
    if (answer.status >= 400) showNotice(answer.body?.detail || `Could not ${action} (${answer.status}).`, "error");
    else showNotice(action === "flag" ? "Thank you: the pair was reported to the admins." : "");
    clearFlagForm();
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
    showNotice("No connection. Try again in a moment.", "error");
    busy = false;
    updateControls();
    if (returnFocusTo instanceof HTMLElement && !returnFocusTo.disabled) returnFocusTo.focus();
    return;
  }
  busy = false;
  await claimNext();
}

/** The progress line from a progress answer (the claim's and the submit's carry one). */
function showProgress(progress) {
  // "Pairs left" on a task's page counts that task's pairs only; a study participant
  // sees their items of the study's quota instead (gold items count, as in the quota).
  const { ratings_today: today, pairs_left_by_kind: leftByKind, study } = progress;
  el.progress.textContent = study
    ? studyProgressText(study)
    : `Rated today: ${today} · Pairs left for you: ${leftByKind[config.kind] ?? 0}`;
  showOtherWork(leftByKind);
}

/** Ask for the progress on its own: only when no pair came, whose answer would carry it. */
async function refreshProgress() {
  try {
    const answer = await api.progress();
    if (answer.status === 200) showProgress(answer.body);
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
  }
}

el.submit.addEventListener("click", submit);
el.skip.addEventListener("click", () => passOn("skip"));
el.flag.addEventListener("click", () => passOn("flag"));
el.flagReason.addEventListener("change", updateControls);
el.flagNote.addEventListener("input", () => el.flagNote.removeAttribute("aria-invalid"));
document.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || event.isComposing) return;
  const focus = slider.hasFocus() ? Focus.SLIDER : document.activeElement === el.flagNote ? Focus.FLAG_NOTE : Focus.OTHER;
  const action = enterAction(focus, { canSubmit: !el.submit.disabled, canFlag: !el.flag.disabled });
  if (action === null) return;
  event.preventDefault();
  if (action === "submit") submit();
  else passOn("flag");
});

// Ratings left from an earlier visit (closed tab, lost connection) are sent first.
async function start() {
  for (const pending of outbox.pending()) {
    const answer = await deliver(pending);
    if (answer.status >= 400 && !handleAuth(answer)) {
      showNotice(answer.body?.detail || "An earlier rating could not be stored.", "error");
    }
  }
  await claimNext();
}

start();
