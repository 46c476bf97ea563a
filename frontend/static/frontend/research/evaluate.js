// The researcher page's evaluation: choose the dataset's own embedding spaces, start an
// evaluation job through the evaluation API, follow its progress, then show its report
// (figures labelled by figures.js, with units, intervals and what could not be computed)
// and files. Polls while one is pending or running. The exports offered as ratings follow
// the export list of research.js, which announces each fresh list ("research:exports").
import { NetworkError, call } from "../rate/api.js";
import { failuresBlock } from "./failures.js";
import { reviewBlock } from "./review.js";
import { SECTIONS, intervalText, metricInfo, rowSubject, skippedLabel, valueText } from "./figures.js";

const config = JSON.parse(document.getElementById("research-config").textContent);
const POLL_MS = 2000;
const $ = (id) => document.getElementById(id);
const el = {
  form: $("evaluate-form"),
  dataset: $("evaluate-dataset"),
  split: $("evaluate-split"),
  name: $("evaluate-name"),
  image: $("evaluate-image"),
  caption: $("evaluate-caption"),
  joint: $("evaluate-joint"),
  jointNote: $("evaluate-joint-note"),
  exportChoice: $("evaluate-export"),
  explain: $("evaluate-explain"),
  threshold: $("evaluate-threshold"),
  adversarial: $("evaluate-adversarial"),
  error: $("evaluate-error"),
  list: $("evaluations"),
};
let pollTimer = null;

function option(value, text) {
  const item = document.createElement("option");
  item.value = value;
  item.textContent = text;
  return item;
}

function make(tag, text = "", className = "") {
  const node = document.createElement(tag);
  if (text) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function spacesOf(modality) {
  return (config.spaces[el.dataset.value] || []).filter((space) => space.modality === modality);
}

function chosenSpace(select, modality) {
  return spacesOf(modality).find((space) => space.name === select.value);
}

// A joint space needs an image and a caption space of one dimension.
function updateJoint() {
  const image = chosenSpace(el.image, "image");
  const caption = chosenSpace(el.caption, "caption");
  const possible = Boolean(image && caption && image.dimension === caption.dimension);
  el.joint.disabled = !possible;
  if (!possible) el.joint.checked = false;
  el.jointNote.textContent = image && caption && !possible ? `(${image.dimension}-d and ${caption.dimension}-d: two spaces)` : "";
}

// The threshold and the adversarial queries belong to the explained failures.
function updateExplain() {
  el.threshold.disabled = !el.explain.checked;
  el.adversarial.disabled = !el.explain.checked;
  if (!el.explain.checked) el.adversarial.checked = false;
}

// The succeeded exports with CxC files of the chosen dataset, keeping the one chosen.
function fillExports(jobs) {
  const chosen = el.exportChoice.value;
  const usable = jobs.filter((job) => job.dataset === el.dataset.value && job.status === "succeeded" && job.formats.includes("cxc"));
  el.exportChoice.replaceChildren(option("", "none"), ...usable.map((job) => option(job.id, `export #${job.id} (${job.splits.join(", ") || "all splits"})`)));
  if (usable.some((job) => String(job.id) === chosen)) el.exportChoice.value = chosen;
}

async function showExports() {
  try {
    const answer = await call("GET", `${config.exports_url}?dataset=${encodeURIComponent(el.dataset.value)}`);
    if (answer.status === 200) fillExports(answer.body);
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
  }
}

function showChoices() {
  el.split.replaceChildren(...(config.splits[el.dataset.value] || []).map((name) => option(name, name)));
  for (const [select, modality] of [[el.image, "image"], [el.caption, "caption"]]) {
    const spaces = spacesOf(modality);
    select.replaceChildren(option("", "none"), ...spaces.map((s) => option(s.name, `${s.name} (${s.dimension}-d)`)));
    if (spaces.length) select.value = spaces[0].name;
  }
  updateJoint();
  showExports();
}

const NOT_COMPUTED = "not computed for this model (see “Not computed” below)";
const CI_MEANING = "A 95 % confidence interval: a range built so that 95 in 100 such ranges hold the true value. Each figure's meaning says how its range is computed.";
const MISSING_MEANING = "The figure could not be computed from these inputs; the reason follows.";

// A value cell: the figure with its unit's sign and its interval, or why it has none.
// ``info``: the figure's label, unit and meaning (the cell carries them for a phone's
// stacked layout and a tooltip).
function valueCell(entry, info, metric) {
  const cell = make("td");
  cell.dataset.metric = metric;
  cell.dataset.label = `${info.label} (${info.unit})`;
  cell.title = info.explain;
  const figure = make("div", "", "figure");
  cell.append(figure);
  if (!entry || entry.value === null || entry.value === undefined) {
    cell.classList.add("missing");
    figure.append(make("span", `not available: ${entry ? entry.unavailable || "not computed" : NOT_COMPUTED}`));
    return cell;
  }
  figure.append(make("span", valueText(entry.value, info.unit), "value"));
  if (entry.ci) figure.append(make("span", intervalText(entry.ci), "ci"));
  return cell;
}

// Retrieval as the papers print it: a row per task and positives (and model), a column
// per figure. A phone stacks each row's figures under their labels.
function rankedTable(rows, names, job, legend) {
  const table = make("table", "", "report ranked");
  table.dataset.section = rows[0].section;
  const subjects = new Map();
  const metrics = [];
  for (const row of rows) {
    const about = rowSubject(row, job.items, config.positive_at);
    if (!subjects.has(about)) subjects.set(about, new Map());
    subjects.get(about).set(row.metric, row);
    if (!metrics.includes(row.metric)) metrics.push(row.metric);
  }
  const infos = metrics.map((metric) => metricInfo(rows[0].section, metric));
  const head = make("tr");
  head.append(make("th", names.length > 1 ? "Task · positives · model" : "Task · positives"));
  for (const info of infos) {
    legend.set(info.label, info);
    const column = make("th");
    column.scope = "col";
    column.title = info.explain;
    column.append(make("span", info.label, "metric"), make("span", info.unit, "unit"));
    head.append(column);
  }
  table.append(make("thead"), make("tbody"));
  table.tHead.append(head);
  for (const [about, figures] of subjects) {
    for (const name of names) {
      const line = make("tr");
      const title = make("th", names.length > 1 ? `${about} · ${name}` : about);
      title.scope = "row";
      line.append(title, ...metrics.map((metric, i) => valueCell(figures.get(metric)?.models[name], infos[i], metric)));
      table.tBodies[0].append(line);
    }
  }
  const scroll = make("div", "", "table-scroll");
  // A box that scrolls sideways on a phone is reached by keyboard too (WCAG 2.1.1).
  scroll.tabIndex = 0;
  scroll.setAttribute("role", "region");
  scroll.setAttribute("aria-label", "Models compared");
  scroll.append(table);
  return scroll;
}

// One section's rows as a table: a row group per subject (task and positives), a row
// per figure with its label, unit and, on hover, its meaning (the legend has it too).
function sectionTable(rows, names, job, legend) {
  const table = make("table", "", "report");
  table.dataset.section = rows[0].section;
  const head = make("tr");
  head.append(make("th", "Figure"), ...names.map((name) => make("th", name)));
  table.append(make("thead"));
  table.tHead.append(head);
  let group = null;
  let subject = null;
  for (const row of rows) {
    const about = rowSubject(row, job.items, config.positive_at);
    if (about !== subject) {
      subject = about;
      group = make("tbody");
      const title = make("th", about, "subject");
      title.scope = "rowgroup";
      title.colSpan = names.length + 1;
      const line = make("tr");
      line.append(title);
      group.append(line);
      table.append(group);
    }
    const info = metricInfo(row.section, row.metric);
    legend.set(info.label, info);
    const figure = make("th");
    figure.scope = "row";
    figure.title = info.explain;
    figure.append(make("span", info.label, "metric"), make("span", info.unit, "unit"));
    const line = make("tr");
    line.append(figure, ...names.map((name) => valueCell(row.models[name], info, row.metric)));
    group.append(line);
  }
  const scroll = make("div", "", "table-scroll");
  scroll.append(table);
  return scroll;
}

function skippedList(job, names) {
  const list = make("ul", "", "skipped");
  for (const name of names) {
    for (const [key, why] of Object.entries(job.skipped?.[name] || {})) {
      const item = make("li");
      const who = names.length > 1 ? `${name}: ` : "";
      item.append(make("strong", `${who}${skippedLabel(key, config.positive_at)}`), `: not available: ${why}`);
      list.append(item);
    }
  }
  return list;
}

function legendList(legend) {
  const details = make("details", "", "legend");
  const list = make("dl");
  for (const info of legend.values()) list.append(make("dt", `${info.label} (${info.unit})`), make("dd", info.explain));
  list.append(make("dt", "95 % CI"), make("dd", CI_MEANING), make("dt", "not available"), make("dd", MISSING_MEANING));
  details.append(make("summary", "What the figures mean"), list);
  return details;
}

function report(job) {
  const names = job.models.map((model) => model.name);
  const part = make("div", "", "report-body");
  if (job.items?.images) {
    const counts = `${job.items.images.toLocaleString("en")} images and ${job.items.captions.toLocaleString("en")} captions`;
    part.append(make("p", `Split ${job.split}: ${counts}. Values with a 95 % confidence interval (CI) where the figure carries one.`, "note"));
  }
  const legend = new Map();
  const sections = new Map();
  for (const row of job.comparison) {
    if (!sections.has(row.section)) sections.set(row.section, []);
    sections.get(row.section).push(row);
  }
  for (const [section, rows] of sections) {
    const about = SECTIONS[section] || { title: section, note: "" };
    const ranked = section === "retrieval" || section === "coco_1k";
    const table = ranked ? rankedTable(rows, names, job, legend) : sectionTable(rows, names, job, legend);
    part.append(make("h4", about.title), make("p", about.note, "note"), table);
  }
  const skipped = skippedList(job, names);
  if (skipped.children.length) part.append(make("h4", "Not computed, and why"), skipped);
  part.append(legendList(legend));
  return part;
}

function jobBlock(job, newest) {
  const block = make("article", "", "evaluation");
  block.dataset.job = job.id;
  block.dataset.status = job.status;
  const models = job.models.map((m) => m.name).join(", ");
  const title = make("h3", `Evaluation ${job.number ?? job.id} · ${job.dataset} · ${job.split} · ${models}`);
  const status = make("span", job.stale ? `${job.status} (stalled)` : job.status, `status ${job.status}`);
  block.append(title, status, make("span", ` · job id ${job.id} in the API`, "note"));
  if (job.status === "pending" || job.status === "running") {
    const bar = make("progress");
    if (job.progress_total) {
      bar.max = job.progress_total;
      bar.value = job.progress_done;
    }
    block.append(" ", bar, make("div", job.progress_message || "waiting for a worker", "note"));
  }
  if (job.status === "failed") block.append(make("div", job.error, "error"));
  if (job.status === "succeeded") {
    const files = make("p", "", "files");
    for (const file of job.files) {
      const link = make("a", file.name);
      link.href = file.url;
      link.setAttribute("download", file.name);
      files.append(link, " ");
    }
    const details = make("details");
    details.open = newest;
    details.append(make("summary", `Report: ${job.comparison.length} figures`), report(job));
    block.append(files, details);
    if (job.explain) {
      const failures = failuresBlock(`${config.evaluations_url}${job.id}/failures/`);
      const review = reviewBlock(`${config.evaluations_url}${job.id}/review/`, `${config.evaluations_url}${job.id}/review.csv`, failures.reload);
      block.append(failures, review);
    }
  }
  return block;
}

async function refresh() {
  window.clearTimeout(pollTimer);
  try {
    const answer = await call("GET", config.evaluations_url);
    if (answer.status === 200) {
      el.list.replaceChildren(...answer.body.map((job, i) => jobBlock(job, i === 0)));
      const busy = answer.body.some((job) => (job.status === "pending" || job.status === "running") && !job.stale);
      if (busy) pollTimer = window.setTimeout(refresh, POLL_MS);
      return;
    }
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
  }
  pollTimer = window.setTimeout(refresh, POLL_MS * 2);
}

async function start(event) {
  event.preventDefault();
  const data = new FormData(el.form);
  const body = {
    dataset: data.get("dataset"),
    split: data.get("split"),
    models: [{
      name: data.get("name"),
      image_space: data.get("image_space") || null,
      caption_space: data.get("caption_space") || null,
      joint: el.joint.checked,
    }],
    ratings_export: data.get("ratings_export") ? Number(data.get("ratings_export")) : null,
    audited: data.get("audited") === "on",
    explain: el.explain.checked,
  };
  if (el.explain.checked) {
    body.size_threshold = Number(el.threshold.value);
    body.adversarial = el.adversarial.checked ? {} : null;
  }
  el.error.hidden = true;
  const button = el.form.querySelector("button");
  button.disabled = true;
  try {
    const answer = await call("POST", config.evaluations_url, body);
    if (answer.status !== 202) {
      const detail = answer.body?.detail || JSON.stringify(answer.body) || `HTTP ${answer.status}`;
      el.error.textContent = `The evaluation was not started: ${detail}`;
      el.error.hidden = false;
    }
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
    el.error.textContent = "No connection: the evaluation was not started. Try again.";
    el.error.hidden = false;
  } finally {
    button.disabled = false;
  }
  await refresh();
}

if (el.form) {
  // research.js lists every export (and polls while one runs): an export that finishes
  // becomes a choice here without a reload.
  document.addEventListener("research:exports", (event) => fillExports(event.detail));
  el.dataset.addEventListener("change", showChoices);
  el.image.addEventListener("change", updateJoint);
  el.caption.addEventListener("change", updateJoint);
  el.explain.addEventListener("change", updateExplain);
  el.form.addEventListener("submit", start);
  showChoices();
  updateExplain();
}
refresh();
