// The failure review page: claims a review (the query, the expected picture, the
// retrieved one), takes the marks and the slider (which never shows its number), submits
// both to the review API, keeps the lease alive, and goes on to the next review.
import { NetworkError, call } from "./api.js";
import { reserveBox, showNoticeIn } from "./items.js";
import { createSlider } from "./slider.js";
import { reviewSubmission, toggleMark } from "./review_state.js";

const config = JSON.parse(document.getElementById("rate-config").textContent);
const base = config.api_base;
const work = document.getElementById("work");
const state = document.getElementById("state");
const notice = document.getElementById("notice");
const submitButton = document.getElementById("submit");
const skipButton = document.getElementById("skip");
const boxes = [...document.querySelectorAll("#marks input[name=mark]")];
const progress = document.getElementById("progress");

let current = null;
let marks = [];
let shownAt = 0;
let firstMoveAt = null;
let adjustments = 0;
let reviewed = 0;
let heartbeat = null;

const slider = createSlider(document.getElementById("scale"), {
  kind: "REV",
  levels: config.levels,
  onChange: () => {
    if (firstMoveAt === null) firstMoveAt = performance.now();
    adjustments += 1;
    submitButton.disabled = false;
  },
});

function showImage(figure, side) {
  const image = figure.querySelector("img");
  // The last review's picture must not stand in the new one's box until the file arrives.
  image.removeAttribute("src");
  reserveBox(image, side);
  image.src = side.url;
}

function showState(title, text) {
  work.hidden = true;
  state.hidden = false;
  state.querySelector("h2").textContent = title;
  state.querySelector("p").textContent = text;
}

function show(item) {
  current = item;
  marks = [];
  for (const box of boxes) box.checked = false;
  slider.reset();
  firstMoveAt = null;
  adjustments = 0;
  submitButton.disabled = true;
  skipButton.disabled = false;
  document.getElementById("query").textContent = item.query;
  showImage(document.getElementById("expected"), item.expected);
  showImage(document.getElementById("retrieved"), item.retrieved);
  state.hidden = true;
  work.hidden = false;
  // Marks the review shown and ready to be judged (tests and assistive tools wait for it).
  work.dataset.ready = "";
  shownAt = performance.now();
  clearInterval(heartbeat);
  heartbeat = setInterval(() => call("POST", `${base}${item.slot_id}/heartbeat/`).catch(() => {}), 120_000);
}

async function next() {
  current = null;
  delete work.dataset.ready;
  clearInterval(heartbeat);
  try {
    const answer = await call("POST", `${base}claim/`, {});
    if (answer.status === 200) return show(answer.body);
    if (answer.status === 204) return showState("No failures left to review", "Every failure queued for review has its reviews, or you reviewed the ones left. Thank you.");
    showState("Reviews cannot be served", answer.body?.detail || `The server answered ${answer.status}.`);
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
    showNoticeIn(notice, "No connection: reload the page to go on.", "error");
  }
}

// Enter on the slider submits once it is set, as on the rating page.
document.getElementById("scale").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && slider.hasFocus() && !submitButton.disabled) {
    event.preventDefault();
    submitButton.click();
  }
});

for (const box of boxes) {
  box.addEventListener("change", () => {
    marks = toggleMark(marks, box.value, box.checked);
    for (const other of boxes) other.checked = marks.includes(other.value);
  });
}

submitButton.addEventListener("click", async () => {
  if (!current || slider.value === null) return;
  submitButton.disabled = true;
  skipButton.disabled = true;
  const body = reviewSubmission({
    score: slider.value,
    marks,
    shownAt,
    firstMoveAt,
    adjustments,
    key: `${current.slot_id}-${crypto.randomUUID?.() ?? Math.random().toString(36).slice(2)}`,
    now: performance.now(),
  });
  try {
    const answer = await call("POST", `${base}${current.slot_id}/submit/`, body);
    if (answer.status === 201 || answer.status === 200) {
      reviewed += 1;
      progress.textContent = `${reviewed} reviewed now`;
      showNoticeIn(notice, "");
      return next();
    }
    showNoticeIn(notice, answer.body?.detail || `Not stored: the server answered ${answer.status}.`, "error");
    submitButton.disabled = false;
    skipButton.disabled = false;
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
    showNoticeIn(notice, "No connection: your review was not sent. Try Submit again.", "error");
    submitButton.disabled = false;
    skipButton.disabled = false;
  }
});

skipButton.addEventListener("click", async () => {
  if (!current) return;
  skipButton.disabled = true;
  try {
    await call("POST", `${base}${current.slot_id}/skip/`);
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
  }
  next();
});

progress.textContent = "none reviewed yet";
next();
