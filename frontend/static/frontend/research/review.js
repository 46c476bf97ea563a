// The researcher page's crowd review of an explained evaluation's failures: queue them
// for review by N raters each (POST .../review/), then the review's figures (GET): per
// model how many failures were reviewed, the share of them each mark holds for (a
// majority of their raters ticked it), and the Spearman correlation of the mean human
// score with each concept metric in both forms, with n and p. evaluate.js places it.
import { NetworkError, call } from "../rate/api.js";

const MARKS = {
  object_class: "Object class",
  object_color: "Object colour",
  object_count: "Object count",
  action: "Action",
  size: "Size",
  details: "Details",
  fair_alternative: "A fair alternative",
};
const METRICS = [
  ["CA", "concept agreement"],
  ["NCS", "non-common concept similarity"],
  ["CE", "concept enumeration"],
  ["SD", "size disagreement"],
];

function make(tag, text = "", className = "") {
  const node = document.createElement(tag);
  if (text) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function share(value) {
  return value === null || value === undefined ? "–" : `${Math.round(value * 100)} %`;
}

function rhoCell(result) {
  const cell = make("td", "", "rho");
  if (result.rho === null) {
    cell.append(make("span", "–", "value"), make("span", `n\u00a0${result.n}: too few, or constant`, "ci"));
    return cell;
  }
  // No break inside "n 23" or "p 0.132" when the cell wraps.
  const p = result.p < 0.001 ? "p\u00a0<\u00a00.001" : `p\u00a0${result.p.toFixed(3)}`;
  cell.append(make("span", result.rho.toFixed(3), "value"), make("span", `n\u00a0${result.n} · ${p}`, "ci"));
  return cell;
}

function correlationTable(model) {
  const table = make("table", "", "report review-correlations");
  const head = make("tr");
  for (const text of ["Metric", "Every object", "Objects the query names"]) {
    const th = make("th", text);
    th.scope = "col";
    head.append(th);
  }
  table.append(make("thead"), make("tbody"));
  table.tHead.append(head);
  for (const [metric, label] of METRICS) {
    const row = make("tr");
    const th = make("th");
    th.scope = "row";
    th.append(make("span", metric, "metric"), make("span", label, "unit"));
    row.append(th, rhoCell(model.correlations[`agnostic_${metric}`]), rhoCell(model.correlations[`informed_${metric}`]));
    table.tBodies[0].append(row);
  }
  return table;
}

function marksTable(model) {
  const table = make("table", "", "report review-marks-table");
  const head = make("tr");
  for (const text of ["Mark", "Failures it holds for"]) {
    const th = make("th", text);
    th.scope = "col";
    head.append(th);
  }
  table.append(make("thead"), make("tbody"));
  table.tHead.append(head);
  for (const [mark, label] of Object.entries(MARKS)) {
    const figures = model.marks[mark];
    const row = make("tr");
    const th = make("th", label);
    th.scope = "row";
    row.append(th, make("td", `${share(figures.share)} (${figures.failures} of ${figures.reviewed})`));
    table.tBodies[0].append(row);
  }
  return table;
}

function figures(report, csvUrl) {
  const box = make("div", "", "review-figures");
  const link = make("a", "Download the review (CSV)");
  link.href = csvUrl;
  link.setAttribute("download", "");
  box.append(make("p", `Queued for ${report.raters_per_failure} raters per failure. A mark holds for a failure when most of its raters ticked it.`, "note"), link);
  for (const [name, model] of Object.entries(report.models)) {
    const section = make("section", "", "review-model");
    section.dataset.model = name;
    section.append(
      make("h4", `${name}: ${model.reviewed} of ${model.failures} failures reviewed, ${model.complete} by every rater`),
      make("p", "Spearman's ρ of the crowd's mean score with each concept metric, over the reviewed failures where the metric is defined:", "note"),
      scroller(correlationTable(model), `Correlations of ${name}`),
      make("p", "The marks: the share of the reviewed failures for which most raters ticked each.", "note"),
      scroller(marksTable(model), `Marks of ${name}`),
    );
    box.append(section);
  }
  return box;
}

function scroller(table, label) {
  const scroll = make("div", "", "table-scroll");
  scroll.tabIndex = 0;
  scroll.setAttribute("role", "region");
  scroll.setAttribute("aria-label", label);
  scroll.append(table);
  return scroll;
}

function queueForm(url, done) {
  const form = make("form", "", "row review-queue");
  const label = make("label", "Raters per failure");
  const raters = make("input");
  raters.type = "number";
  raters.min = "1";
  raters.max = "50";
  raters.value = "5";
  raters.id = `review-raters-${url.split("/").filter(Boolean).at(-2)}`;
  label.htmlFor = raters.id;
  const button = make("button", "Queue the failures for review", "primary");
  button.type = "submit";
  const message = make("p", "", "note");
  message.setAttribute("role", "status");
  form.append(label, raters, button, message);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    try {
      const answer = await call("POST", url, { raters: Number(raters.value) });
      if (answer.status === 201 || answer.status === 200) return done(answer.body);
      message.textContent = answer.body?.detail || `Not queued: the server answered ${answer.status}.`;
      message.className = "error";
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
      message.textContent = "No connection: the failures were not queued. Try again.";
    }
    button.disabled = false;
  });
  return form;
}

// The block of one succeeded explained evaluation (``url``: its review's address in the
// API); ``onChange`` runs once the figures changed (the failures list shows the crowd).
export function reviewBlock(url, csvUrl, onChange) {
  const details = make("details", "", "failure-review");
  details.append(make("summary", "Crowd review of the failures: marks and correlations"));
  const body = make("div");
  details.append(body);
  async function load() {
    try {
      const answer = await call("GET", url);
      if (answer.status === 200 && answer.body.queued === false) {
        body.replaceChildren(
          make("p", "Raters compare each failure's query with the expected and the retrieved image, mark what the retrieved one misreads and score how close it comes.", "note"),
          queueForm(url, (queued) => {
            const items = `${queued.pairs_new} new item${queued.pairs_new === 1 ? "" : "s"} for raters`;
            body.prepend(make("p", `${queued.failures} failure${queued.failures === 1 ? "" : "s"} queued (${items}).`, "note queued"));
            load();
          }),
        );
        return;
      }
      if (answer.status !== 200) {
        body.replaceChildren(make("p", `The review could not be read: ${answer.body?.detail || answer.status}`, "error"));
        return;
      }
      const refresh = make("button", "Refresh", "page");
      refresh.type = "button";
      refresh.addEventListener("click", load);
      const queued = body.querySelector(".queued");
      body.replaceChildren(...(queued ? [queued] : []), figures(answer.body, csvUrl), refresh);
      onChange?.();
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
      body.replaceChildren(make("p", "No connection: the review could not be read. Open this again.", "error"));
    }
  }
  details.addEventListener("toggle", () => {
    if (details.open && !body.children.length) load();
  });
  return details;
}
