// The qualification quiz in the rating page: the same pair, slider and Submit as the task,
// one question after the other with nothing said about the reference while the attempt is
// open. Once it ends, its result and its review: for each pair answered, the reference
// level's name, its description and the pair's explanation (the API sends names, never
// numbers, and only for the questions this rater answered).
// A passed attempt reloads the page, which then serves the task itself.
import { NetworkError, call } from "./api.js";
import { itemNode, showNoticeIn } from "./items.js";
import { Focus, enterAction } from "./keys.js";
import { createSlider } from "./slider.js";
import { ItemTimer, newKey } from "./state.js";

const config = JSON.parse(document.getElementById("rate-config").textContent);

const el = {
  instructions: document.getElementById("instructions"),
  pair: document.getElementById("pair"),
  scale: document.getElementById("scale"),
  submit: document.getElementById("submit"),
  progress: document.getElementById("progress"),
  notice: document.getElementById("notice"),
  work: document.getElementById("work"),
  result: document.getElementById("quiz-result"),
  meanError: document.getElementById("quiz-mean-error"),
  review: document.getElementById("quiz-review"),
  again: document.getElementById("quiz-again"),
  proceed: document.getElementById("quiz-proceed"),
};

let question = null;
let timer = null;
let busy = false;

const slider = createSlider(el.scale, {
  kind: config.kind,
  levels: config.levels,
  onChange(_value, source) {
    timer?.moved(source);
    updateControls();
  },
});
// The quiz is a newcomer's first sight of the task: the instructions start open.
el.instructions.open = true;

function showNotice(text, kind = "info") {
  showNoticeIn(el.notice, text, kind);
}

function updateControls() {
  el.submit.disabled = question === null || busy || slider.value === null;
}

/** Show where the rater stands: the next question, or the attempt's result. */
function show(state) {
  const place = state.result ? "finished" : `question ${state.answered + 1} of ${state.total}`;
  el.progress.textContent = `Qualification quiz · attempt ${state.attempt} of ${state.attempts_allowed} · ${place}`;
  if (state.result) {
    showResult(state);
    showReview(state.review || []);
    return;
  }
  el.result.hidden = true;
  el.review.hidden = true;
  el.work.hidden = false;
  question = state;
  el.pair.replaceChildren(...state.items.map(itemNode));
  slider.reset();
  timer = new ItemTimer();
  el.submit.hidden = false;
  updateControls();
  el.pair.dataset.ready = String(state.gold_pair_id);
  slider.focus();
}

function showResult(state) {
  question = null;
  el.work.hidden = true;
  el.result.hidden = false;
  const { passed } = state.result;
  el.result.dataset.outcome = passed ? "passed" : "failed";
  const heading = el.result.querySelector("h2");
  const text = el.result.querySelector("p");
  el.again.hidden = true;
  el.proceed.hidden = !passed;
  if (passed) {
    heading.textContent = "You passed the quiz";
    text.textContent = "Your answers were close to the reference levels. You may now rate pairs of this task.";
  } else if (state.attempts_left > 0) {
    heading.textContent = "Not passed this time";
    text.textContent =
      "Your answers were too far from the reference levels on average. Read the instructions and the explanations below again; you have one more attempt, with other questions.";
    el.again.hidden = false;
  } else {
    heading.textContent = "The quiz was not passed";
    text.textContent = config.quiz_failed_text;
    // A crowd participant goes on through their campaign link.
    el.proceed.hidden = !config.next_url;
    el.proceed.textContent = "Continue";
  }
  el.meanError.textContent = meanErrorText(state.result);
  // The work area is gone: the keyboard goes on from the result's button.
  [el.again, el.proceed].find((button) => !button.hidden)?.focus();
}

/** The attempt's one number: how far its answers were from the references on average,
 * against the limit a pass stays under (one aggregate; the review below names levels only). */
function meanErrorText({ mean_error: error, threshold }) {
  return `Your answers were on average ${error.toFixed(2)} levels from the reference levels; a pass needs less than ${threshold.toFixed(2)} levels.`;
}

/** The finished attempt's review: each pair answered, its reference level and why. */
function showReview(entries) {
  const list = el.review.querySelector("ol");
  list.replaceChildren(
    ...entries.map((entry) => {
      const row = document.createElement("li");
      row.dataset.question = entry.question;
      const pair = document.createElement("div");
      pair.className = "review-pair";
      pair.append(...entry.items.map(itemNode));
      const reference = document.createElement("p");
      reference.className = "reference";
      reference.textContent = `Reference: ${entry.reference_level}: ${entry.reference_detail}`;
      const yours = document.createElement("p");
      yours.className = "yours";
      yours.textContent = `Your answer: ${entry.your_level}`;
      row.append(pair, reference, yours);
      if (entry.explanation) {
        const why = document.createElement("p");
        why.className = "explanation";
        why.textContent = entry.explanation;
        row.append(why);
      }
      return row;
    }),
  );
  el.review.hidden = entries.length === 0;
}

async function request(body, url = config.quiz_url) {
  for (;;) {
    try {
      return await call("POST", url, body);
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
      showNotice("No connection. Trying again…", "error");
      await new Promise((resolve) => window.setTimeout(resolve, 2000));
    }
  }
}

async function load(start = false) {
  const answer = await request({ start });
  showNotice("");
  if (answer.status === 200) show(answer.body);
  else showNotice(answer.body?.detail || `Could not load the quiz (${answer.status}).`, "error");
}

async function submit() {
  if (question === null || slider.value === null || busy) return;
  busy = true;
  updateControls();
  const body = {
    gold_pair_id: question.gold_pair_id,
    score: slider.value,
    idempotency_key: newKey(),
    ...timer.facts(),
  };
  const answer = await request(body, `${config.quiz_url}answer/`);
  busy = false;
  if (answer.status === 200 || answer.status === 201) {
    showNotice("");
    question = null;
    show(answer.body.state);
  } else {
    showNotice(answer.body?.detail || `Your answer was not stored (${answer.status}).`, "error");
    await load();
  }
  updateControls();
}

el.submit.addEventListener("click", submit);
el.again.addEventListener("click", () => load(true));
el.proceed.addEventListener("click", () => {
  if (question === null && el.result.dataset.outcome === "failed" && config.next_url) window.location.assign(config.next_url);
  else window.location.reload();
});
document.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || event.isComposing) return;
  const focus = slider.hasFocus() ? Focus.SLIDER : Focus.OTHER;
  const canSubmit = !el.submit.disabled && !el.submit.hidden;
  if (enterAction(focus, { canSubmit, canFlag: false }) === "submit") {
    event.preventDefault();
    submit();
  }
});

load();
