// The researcher page's explained failures of an evaluation: one model's failures a page
// at a time from the evaluation API (GET .../failures/), sortable by rank or any concept
// metric (a column's button; again for the other order), each with its query, the image
// it belongs to and the image ranked first in its place, their concepts and the scores in
// both forms (every object / the objects the query names), and once the failures are
// queued for review the crowd's mean score, raters and the marks most of them ticked
// (sortable too). evaluate.js places the block.
import { NetworkError, call } from "../rate/api.js";

const PAGE = 20;
const METRICS = [
  ["CA", "CA", "concept agreement: the share of the image's concepts the retrieved image has too"],
  ["NCS", "NCS", "non-common concept similarity: the concepts only one image has, their best one-to-one WordNet similarity"],
  ["CE", "CE", "concept enumeration: the object counts' differences over the common concepts"],
  ["SD", "SD", "size disagreement: the area differences of the common concepts' matched objects, as shares of the image"],
  ["SD_binary", "Binary SD", "matched objects differing in area by more than the threshold"],
];

function make(tag, text = "", className = "") {
  const node = document.createElement(tag);
  if (text) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function number(value, metric) {
  if (value === null || value === undefined) return "–";
  if (metric === "CE" || metric === "SD_binary") return String(value);
  return value.toFixed(3);
}

function imageFigure(url, key, concepts, caption) {
  const figure = make("figure", "", "failure-image");
  if (url) {
    const image = make("img");
    image.src = url;
    image.alt = `${caption}: ${concepts || "no annotated objects"}`;
    image.loading = "lazy";
    figure.append(image);
  }
  const text = make("figcaption");
  text.append(make("strong", caption), make("span", key, "key"), make("span", concepts || "no annotated objects", "concepts"));
  figure.append(text);
  return figure;
}

function scoreCell(row, metric, label) {
  const cell = make("td", "", "score");
  cell.dataset.metric = metric;
  cell.dataset.label = label;
  const all = make("span", number(row[`agnostic_${metric}`], metric), "agnostic");
  all.title = "over every annotated object";
  const named = make("span", number(row[`informed_${metric}`], metric), "informed");
  named.title = "over the objects the query names";
  cell.append(all, make("span", " / ", "slash"), named);
  return cell;
}

const MARK_LABELS = {
  object_class: "object class",
  object_color: "object colour",
  object_count: "object count",
  action: "action",
  size: "size",
  details: "details",
  fair_alternative: "a fair alternative",
};

function crowdCell(review) {
  const cell = make("td", "", "crowd");
  cell.dataset.label = "Crowd";
  if (!review || !review.raters) {
    cell.append(make("span", review ? "not reviewed yet" : "–", "pending"));
    return cell;
  }
  cell.append(make("span", review.mean.toFixed(2), "mean"), make("span", `${review.raters} rater${review.raters === 1 ? "" : "s"}`, "raters"));
  const marks = make("span", review.marks.length ? review.marks.map((m) => MARK_LABELS[m] || m).join(", ") : "no mark by a majority", "marks");
  cell.append(marks);
  return cell;
}

function failureRow(row, reviewed) {
  const line = make("tr");
  const query = make("td", "", "query");
  query.dataset.label = "Query";
  query.append(make("q", row.query_text), make("span", ` rank ${row.rank}`, "rank"));
  if (row.query_concepts) query.append(make("span", `names: ${row.query_concepts}`, "concepts"));
  if (row.explanation) {
    const list = make("ul", "", "explanation");
    for (const sentence of row.explanation.split(". ")) list.append(make("li", sentence));
    query.append(list);
  }
  const images = make("td", "", "images");
  images.dataset.label = "Images";
  images.append(
    imageFigure(row.truth_image_url, row.truth_image, row.truth_concepts, "Its image"),
    imageFigure(row.retrieved_image_url, row.retrieved_image, row.retrieved_concepts, "Ranked first"),
  );
  line.append(query, images, ...METRICS.map(([metric, label]) => scoreCell(row, metric, label)));
  if (reviewed) line.append(crowdCell(row.review));
  return line;
}

function sortButton(state, column, label, title, reload) {
  const head = make("th");
  head.scope = "col";
  const button = make("button", label, "sort");
  button.type = "button";
  button.title = `Sort by ${title}`;
  if (state.sort === column) head.setAttribute("aria-sort", state.descending ? "descending" : "ascending");
  button.addEventListener("click", () => {
    state.descending = state.sort === column ? !state.descending : column !== "rank";
    state.sort = column;
    state.offset = 0;
    reload();
  });
  head.append(button);
  return head;
}

function table(state, page, reload) {
  const grid = make("table", "", "failures");
  const head = make("tr");
  const query = sortButton(state, "rank", "Query · rank", "the image's rank", reload);
  const images = make("th", "Its image · the image ranked first", "images-head");
  images.scope = "col";
  const form = state.form === "agnostic" ? "" : "informed_";
  head.append(query, images, ...METRICS.map(([metric, label, title]) => sortButton(state, `${form || "agnostic_"}${metric}`, label, title, reload)));
  const reviewed = page.rows.some((row) => row.review);
  if (reviewed) head.append(sortButton(state, "review_mean", "Crowd", "the crowd's mean score of the retrieved image", reload));
  grid.append(make("thead"), make("tbody"));
  grid.tHead.append(head);
  grid.tBodies[0].append(...page.rows.map((row) => failureRow(row, reviewed)));
  return grid;
}

function pager(state, page, reload) {
  const bar = make("div", "", "pager");
  const last = Math.min(state.offset + page.rows.length, page.count);
  bar.append(make("span", page.count ? `${(state.offset + 1).toLocaleString("en")}–${last.toLocaleString("en")} of ${page.count.toLocaleString("en")} failures` : "no failures"));
  for (const [text, offset, enabled] of [
    ["Previous", state.offset - PAGE, state.offset > 0],
    ["Next", state.offset + PAGE, last < page.count],
  ]) {
    const button = make("button", text, "page");
    button.type = "button";
    button.disabled = !enabled;
    button.addEventListener("click", () => {
      state.offset = offset;
      reload();
    });
    bar.append(button);
  }
  return bar;
}

function controls(state, page, reload) {
  const bar = make("div", "", "row failure-controls");
  if (page.models.length > 1) {
    const label = make("label", "Model ");
    const select = make("select");
    for (const name of page.models) select.append(new Option(name, name, false, name === state.model));
    select.addEventListener("change", () => {
      state.model = select.value;
      state.offset = 0;
      reload();
    });
    label.append(select);
    bar.append(label);
  }
  const label = make("label", "Sort the scores of ");
  const select = make("select");
  select.append(new Option("every object", "agnostic"), new Option("the objects the query names", "informed"));
  select.value = state.form;
  select.addEventListener("change", () => {
    state.form = select.value;
    if (state.sort !== "rank" && state.sort !== "review_mean") state.sort = `${state.form}_${state.sort.split("_").slice(1).join("_")}`;
    reload();
  });
  label.append(select);
  bar.append(label);
  return bar;
}

// The block of one succeeded evaluation with explained failures (``url``: its failures'
// address in the API): loads its first page when opened.
export function failuresBlock(url) {
  const details = make("details", "", "explained-failures");
  details.reload = () => details.open && reload();
  details.append(make("summary", "Explained failures: the queries, their two images and their scores"));
  const body = make("div");
  details.append(body);
  const state = { model: null, sort: "rank", descending: false, offset: 0, form: "agnostic" };
  async function reload() {
    const query = new URLSearchParams({ sort: state.sort, descending: state.descending, offset: state.offset, limit: PAGE });
    if (state.model) query.set("model", state.model);
    try {
      const answer = await call("GET", `${url}?${query}`);
      if (answer.status !== 200) {
        body.replaceChildren(make("p", `The failures could not be read: ${answer.body?.detail || answer.status}`, "error"));
        return;
      }
      state.model = state.model || answer.body.models[0] || null;
      const note = make("p", "Scores: over every annotated object / over the objects the query names; – where a score is undefined. A column's button sorts by it, again for the other order.", "note");
      const scroll = make("div", "", "table-scroll");
      scroll.tabIndex = 0;
      scroll.setAttribute("role", "region");
      scroll.setAttribute("aria-label", "Failures");
      scroll.append(table(state, answer.body, reload));
      body.replaceChildren(controls(state, answer.body, reload), note, scroll, pager(state, answer.body, reload));
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
      body.replaceChildren(make("p", "No connection: the failures could not be read. Open this again.", "error"));
    }
  }
  details.addEventListener("toggle", () => {
    if (details.open && !body.children.length) reload();
  });
  return details;
}
