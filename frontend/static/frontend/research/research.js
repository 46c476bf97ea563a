// The researcher page: start an export through the export API, list the export jobs
// with their progress and files, and poll while one is pending or running.
import { NetworkError, call } from "../rate/api.js";

const config = JSON.parse(document.getElementById("research-config").textContent);
const POLL_MS = 2000;

const el = {
  form: document.getElementById("export-form"),
  dataset: document.getElementById("export-dataset"),
  splits: document.querySelector("#export-splits .choices"),
  error: document.getElementById("export-error"),
  jobs: document.getElementById("jobs"),
  empty: document.getElementById("jobs-empty"),
};

let pollTimer = null;

function showSplits() {
  const names = (el.dataset.selectedOptions[0]?.dataset.splits || "").split(",").filter(Boolean);
  el.splits.replaceChildren(
    ...names.map((name) => {
      const label = document.createElement("label");
      label.className = "choice";
      const box = document.createElement("input");
      box.type = "checkbox";
      box.name = "splits";
      box.value = name;
      label.append(box, ` ${name}`);
      return label;
    }),
  );
}

const COLUMNS = ["#", "Dataset", "Splits · formats", "Status", "Pairs · ratings", "Files"];

function cell(content, className = "") {
  const td = document.createElement("td");
  if (className) td.className = className;
  td.append(...[content].flat());
  return td;
}

function statusCell(job) {
  const parts = [];
  const label = document.createElement("span");
  label.className = `status ${job.status}`;
  label.textContent = job.stale ? `${job.status} (stalled)` : job.status;
  parts.push(label);
  if (job.status === "running" || job.status === "pending") {
    const bar = document.createElement("progress");
    if (job.progress_total) {
      bar.max = job.progress_total;
      bar.value = job.progress_done;
    }
    parts.push(document.createElement("br"), bar);
  }
  const message = job.status === "failed" ? job.error : job.progress_message;
  if (message) {
    const note = document.createElement("div");
    note.className = job.status === "failed" ? "error" : "note";
    note.textContent = message;
    parts.push(note);
  }
  return cell(parts);
}

function link(url, text, name) {
  const a = document.createElement("a");
  a.href = url;
  a.textContent = text;
  a.setAttribute("download", name);
  return a;
}

function filesCell(job) {
  if (job.status !== "succeeded") return cell("—");
  const zipName = `${job.dataset}-export-${job.id}.zip`;
  const all = link(job.archive_url, `Download all (${zipName})`, zipName);
  all.className = "archive";
  return cell([all, ...job.files.map((file) => link(file.url, file.name, file.name))], "files");
}

function renderJobs(jobs) {
  el.empty.hidden = jobs.length > 0;
  el.jobs.hidden = jobs.length === 0;
  el.jobs.querySelector("tbody").replaceChildren(
    ...jobs.map((job) => {
      const row = document.createElement("tr");
      row.dataset.job = job.id;
      row.dataset.status = job.status;
      const counts = job.pairs === null || job.pairs === undefined ? "—" : `${job.pairs} · ${job.ratings}`;
      row.append(
        cell(String(job.id)),
        cell(job.dataset),
        cell(`${job.splits.join(", ") || "all"} · ${job.formats.join(", ")}`),
        statusCell(job),
        cell(counts),
        filesCell(job),
      );
      // The column names, shown beside each value where the table stacks (a phone).
      [...row.children].forEach((td, i) => td.setAttribute("data-label", COLUMNS[i]));
      return row;
    }),
  );
}

async function refresh() {
  window.clearTimeout(pollTimer);
  try {
    const answer = await call("GET", config.exports_url);
    if (answer.status === 200) {
      renderJobs(answer.body);
      // The evaluation form offers the succeeded exports as ratings: it follows this list.
      document.dispatchEvent(new CustomEvent("research:exports", { detail: answer.body }));
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
  const body = { dataset: data.get("dataset"), splits: data.getAll("splits"), formats: data.getAll("formats") };
  el.error.hidden = true;
  if (body.formats.length === 0) {
    el.error.textContent = "Tick at least one format.";
    el.error.hidden = false;
    return;
  }
  const button = el.form.querySelector("button");
  button.disabled = true;
  try {
    const answer = await call("POST", config.exports_url, body);
    if (answer.status !== 202) {
      const detail = answer.body?.detail || JSON.stringify(answer.body) || `HTTP ${answer.status}`;
      el.error.textContent = `The export was not started: ${detail}`;
      el.error.hidden = false;
    }
  } catch (error) {
    if (!(error instanceof NetworkError)) throw error;
    el.error.textContent = "No connection: the export was not started. Try again.";
    el.error.hidden = false;
  } finally {
    button.disabled = false;
  }
  await refresh();
}

if (el.form) {
  el.dataset.addEventListener("change", showSplits);
  el.form.addEventListener("submit", start);
  showSplits();
}
refresh();
