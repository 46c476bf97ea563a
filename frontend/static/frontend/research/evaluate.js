// The researcher page's evaluation: choose the dataset's own embedding spaces, start an
// evaluation job through the evaluation API, follow its progress, then show its report
// table and files. Polls while one is pending or running.
import { NetworkError, call } from "../rate/api.js";

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

async function showExports() {
  el.exportChoice.replaceChildren(option("", "none"));
  try {
    const answer = await call("GET", `${config.exports_url}?dataset=${encodeURIComponent(el.dataset.value)}`);
    if (answer.status !== 200) return;
    for (const job of answer.body) {
      if (job.status === "succeeded" && job.formats.includes("cxc")) {
        el.exportChoice.append(option(job.id, `export #${job.id} (${job.splits.join(", ")})`));
      }
    }
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

function cellText(entry) {
  if (!entry || entry.value === null || entry.value === undefined) return "—";
  const value = Number.isInteger(entry.value) ? String(entry.value) : entry.value.toFixed(1);
  return entry.ci ? `${value} [${entry.ci[0].toFixed(1)}, ${entry.ci[1].toFixed(1)}]` : value;
}

function reportTable(job) {
  const names = job.models.map((model) => model.name);
  const table = make("table", "", "report");
  const head = make("tr");
  head.append(make("th", "Figure"), ...names.map((name) => make("th", name)));
  table.append(make("thead"), make("tbody"));
  table.tHead.append(head);
  for (const row of job.comparison) {
    const line = make("tr");
    const figure = make("th");
    figure.scope = "row";
    figure.append(make("span", `${row.section} · ${row.task}`), make("br"), make("span", `${row.positives} · ${row.metric}`, "note"));
    line.append(figure, ...names.map((name) => make("td", cellText(row.models[name]))));
    table.tBodies[0].append(line);
  }
  const scroll = make("div", "", "table-scroll");
  // A box that scrolls sideways on a phone is reached by keyboard too (WCAG 2.1.1).
  scroll.tabIndex = 0;
  scroll.setAttribute("role", "region");
  scroll.setAttribute("aria-label", "Models compared");
  scroll.append(table);
  return scroll;
}

function jobBlock(job, newest) {
  const block = make("article", "", "evaluation");
  block.dataset.job = job.id;
  block.dataset.status = job.status;
  const models = job.models.map((m) => m.name).join(", ");
  const title = make("h3", `#${job.id} · ${job.dataset} · ${job.split} · ${models}`);
  const status = make("span", job.stale ? `${job.status} (stalled)` : job.status, `status ${job.status}`);
  block.append(title, status);
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
    details.append(make("summary", `Report: ${job.comparison.length} figures`), reportTable(job));
    block.append(files, details);
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
  };
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
  el.dataset.addEventListener("change", showChoices);
  el.image.addEventListener("change", updateJoint);
  el.caption.addEventListener("change", updateJoint);
  el.form.addEventListener("submit", start);
  showChoices();
}
refresh();
