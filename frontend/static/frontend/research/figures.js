// What each figure of an evaluation means, in the page's words: a label, a unit and an
// explanation per comparison row (section, task, positives, metric), and the names of
// the tasks an evaluation may leave out. The API's keys stay the keys; no DOM here
// (evaluate.js renders).

export const COCO_5K_IMAGES = 5000;

export const SECTIONS = {
  retrieval: {
    title: "Retrieval",
    note: "Each query ranks every other item of the split; the figures are over the queries that have a positive.",
  },
  coco_1k: {
    title: "COCO 1K retrieval",
    note: "Image ↔ text within folds of 1,000 images and their captions (at most five folds), averaged over the folds; the original pairs are the positives.",
  },
  correlation: {
    title: "Correlation with the human scores",
    note: "The CxC protocol: 1,000 samples, each of half of the rated items with one rated pair each; Spearman's ρ between the model's cosine similarity and the human score in each.",
  },
  calibration: {
    title: "Calibration over all rated pairs",
    note: "Over every rated pair of a kind at once, not per query: does one similarity threshold separate the positives from the rest?",
  },
  own_top_k: {
    title: "Precision of the model's own top-k",
    note: "Each query's k most similar items as the model retrieves them, judged by the ratings (an original image-caption pair counts as a positive).",
  },
};

const TASKS = {
  image_to_text: "Image → text",
  text_to_image: "Text → image",
  text_to_text: "Text → text",
  image_to_image: "Image → image",
  STS: "STS: caption–caption",
  SIS: "SIS: image–image",
  SITS: "SITS: caption–image",
};

const SOURCES = {
  original: "original pairs",
  cxc: "the export's ratings (CxC)",
  audited: "the split's own ratings (audited)",
};

const RATINGS_OF = { cxc: "the export's", audited: "the split's own" };
const KIND_OF_TASK = { image_to_text: "SITS", text_to_image: "SITS", text_to_text: "STS", image_to_image: "SIS" };

// The positives ``name`` ("cxc", "audited") of a retrieval task, thresholds and all;
// ``positiveAt``: {kind: the mean score from which a pair is a positive}.
function positivesLabel(task, name, positiveAt) {
  const kind = KIND_OF_TASK[task];
  if (!RATINGS_OF[name] || !kind) return name;
  const pairs = `${RATINGS_OF[name]} ${kind} pairs scored ${positiveAt?.[kind] ?? "at the threshold"} or more`;
  const label = name === "cxc" ? "CxC positives" : "audited positives";
  return kind === "SITS" ? `${label}: original pairs and ${pairs}` : `${label}: ${pairs}`;
}

const PERCENT_OF_QUERIES = "% of queries";

const METRICS = {
  "R@1": { label: "Recall@1", unit: PERCENT_OF_QUERIES, explain: "Share of queries whose first correct item is ranked first." },
  "R@5": { label: "Recall@5", unit: PERCENT_OF_QUERIES, explain: "Share of queries with a correct item among the first 5." },
  "R@10": { label: "Recall@10", unit: PERCENT_OF_QUERIES, explain: "Share of queries with a correct item among the first 10." },
  "R-Precision": {
    label: "R-Precision",
    unit: "%",
    explain: "Mean over the queries of the share of positives among the first R items, R being the query's number of positives.",
  },
  "mAP@R": {
    label: "mAP@R",
    unit: "%",
    explain: "Mean over the queries of the average precision within the first R items (R: the query's positives); ECCV Caption's metric.",
  },
  median_rank: {
    label: "Median rank of the first correct item",
    unit: "rank, 1 is best",
    explain: "Half of the queries find their first correct item at this rank or better. No interval is computed.",
  },
  spearman_mean: {
    label: "Spearman's ρ",
    unit: "ρ × 100",
    explain: "Rank correlation of the model's cosine similarity with the human score, × 100 (100: the same order, 0: unrelated), the mean over the samples; the interval holds the central 95 % of the samples' ρ.",
  },
  spearman_std: {
    label: "Standard deviation of ρ over the samples",
    unit: "ρ × 100",
    explain: "How much ρ varies from sample to sample: the standard error of ρ (each sample holds half of the items).",
  },
  "calibration.spearman": {
    label: "Spearman's ρ over all rated pairs",
    unit: "ρ × 100",
    explain: "Rank correlation of the similarity with the pair's mean human score over every rated pair, × 100; 95 % Fisher-z interval.",
  },
  pr_auc: {
    label: "PR-AUC (average precision)",
    unit: "%",
    explain: "Area under the precision-recall curve of the similarity against the positive pairs (100: one threshold separates them perfectly); 95 % logit interval over the positives.",
  },
  precision_judged: {
    label: "Precision over the rated retrieved items",
    unit: "% of rated items",
    explain: "Share of positives among the retrieved items that are rated, over all queries at once. No interval is computed.",
  },
  queries_fully_judged: {
    label: "Queries with every retrieved item rated",
    unit: "count of queries",
    explain: "The queries Precision@k is computed over.",
  },
  retrieved: { label: "Retrieved items", unit: "count of items", explain: "Queries × k." },
  judged: { label: "Rated retrieved items", unit: "count of items", explain: "Retrieved items a rating or an original pair judges." },
  unrated: { label: "Unrated retrieved items", unit: "count of items", explain: "Retrieved items no one has rated yet: an audit of the model's top-k rates them." },
};

const INTERVAL_NOTE = "The interval is a 95 % bootstrap over the queries.";

// The metric's entry: label, unit, explanation ("P@<k>" is worked out from k).
export function metricInfo(section, metric) {
  const precisionAt = /^P@(\d+)$/.exec(metric);
  if (precisionAt) {
    const k = precisionAt[1];
    return {
      label: `Precision@${k}`,
      unit: "%",
      explain: `The share of positives among a query's ${k} retrieved items, averaged over the queries whose ${k} items are all rated. ${INTERVAL_NOTE}`,
    };
  }
  const entry = METRICS[`${section}.${metric}`] || METRICS[metric];
  if (!entry) return { label: metric, unit: "", explain: "" };
  const means = ["R@1", "R@5", "R@10", "R-Precision", "mAP@R"].includes(metric);
  return means ? { ...entry, explain: `${entry.explain} ${INTERVAL_NOTE}` } : entry;
}

function judgedBy(names) {
  const words = names.split("+").map((name) => SOURCES[name] || name);
  return `judged by ${words.join(", ")}`;
}

// The row's subject: what was retrieved or correlated, against which positives.
// ``items``: the split's {images, captions} (the original pairs are COCO 5K on a split
// of 5,000 images only); ``positiveAt``: the thresholds of the positives per kind.
export function rowSubject(row, items, positiveAt) {
  const task = TASKS[row.task] || row.task;
  if (row.section === "retrieval") {
    if (row.positives === "original") {
      const images = items?.images;
      const over = images === COCO_5K_IMAGES ? "COCO 5K" : images ? `over the split's ${images.toLocaleString("en")} images` : "over the split";
      return `${task} · original pairs, ${over}`;
    }
    return `${task} · ${positivesLabel(row.task, row.positives, positiveAt)}`;
  }
  if (row.section === "coco_1k") return `${task} · original pairs`;
  if (row.section === "own_top_k") return `${task} · ${row.positives === "nothing rated yet" ? "nothing rated yet" : judgedBy(row.positives)}`;
  return `${task} · ${SOURCES[row.positives] ? `human scores from ${SOURCES[row.positives]}` : row.positives}`;
}

// A figure's value as shown: the number with its unit's sign, and its interval.
export function valueText(value, unit) {
  if (unit.startsWith("count")) return value.toLocaleString("en");
  const text = value.toFixed(1);
  return unit.startsWith("%") ? `${text} %` : text;
}

// "95 % CI low to high", breaking (where it must) only between "CI" and the numbers.
export function intervalText(ci) {
  return `95\u00a0%\u00a0CI ${ci[0].toFixed(1)}\u00a0to\u00a0${ci[1].toFixed(1)}`;
}

const SKIPPED = {
  image_to_text: "Image → text retrieval",
  text_to_image: "Text → image retrieval",
  text_to_text: "Text → text retrieval",
  image_to_image: "Image → image retrieval",
  coco_5k: "COCO 5K retrieval",
  coco_1k: "COCO 1K retrieval",
  STS: "STS correlation with the human scores",
  SIS: "SIS correlation with the human scores",
  SITS: "SITS correlation with the human scores",
};

// The name of a task an evaluation left out ("task", "task.positives", "own_top_k.task").
export function skippedLabel(key, positiveAt) {
  const [head, tail] = key.split(".");
  if (head === "own_top_k") return `Precision of the own top-k, ${(TASKS[tail] || tail).toLowerCase()}`;
  const name = SKIPPED[head] || head;
  return tail ? `${name} with the ${positivesLabel(head, tail, positiveAt)}` : name;
}
