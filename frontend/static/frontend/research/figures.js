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
  explain: {
    title: "Explained failures",
    note: "Each caption is a query ranked against every image's other captions (their mean embedding; its own image without it). A failure is a query whose image is not ranked first; the concept metrics compare the objects annotated in its image with those of the image ranked first, over every object and over the objects the query names, averaged over the failures where they are defined.",
  },
  adversarial: {
    title: "Adversarial queries",
    note: "One word of a caption changed at a time, re-embedded by the model's own encoder and ranked again: how many ground truths fall, stay or rise, and how Recall and MRR change over the changed captions.",
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

const EXPLAINED = {
  caption_to_corpus: "Caption → the images' other captions",
  agnostic: "Concept metrics over every annotated object",
  informed: "Concept metrics over the objects the query names",
};

const SUBSTITUTIONS = {
  antonym: "An adjective → a WordNet antonym",
  colour: "A colour → a distant named colour",
  size: "A size word → its opposite",
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

const ZERO_TO_ONE = "0 to 1";
const OVER_FAILURES = "The mean over the failures where it is defined; no interval is computed.";
const CHANGED = "Over the captions this kind of substitution changed.";

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
  "explain.failures": { label: "Failures |F|", unit: "count of queries", explain: "Queries whose image is not ranked first." },
  "explain.R@5": { label: "Recall@5", unit: PERCENT_OF_QUERIES, explain: "Share of queries whose image is among the first 5." },
  "explain.R@10": { label: "Recall@10", unit: PERCENT_OF_QUERIES, explain: "Share of queries whose image is among the first 10." },
  "explain.R@N": { label: "Recall@N", unit: PERCENT_OF_QUERIES, explain: "Share of queries whose image is ranked at all (N: every image): 100 unless an image has no other caption." },
  "explain.MRR@5": { label: "MRR@5", unit: ZERO_TO_ONE, explain: "Mean over the queries of 1 / the image's rank when it is among the first 5, else 0." },
  "explain.MRR@10": { label: "MRR@10", unit: ZERO_TO_ONE, explain: "Mean over the queries of 1 / the image's rank when it is among the first 10, else 0." },
  "explain.MRR@N": { label: "MRR@N", unit: ZERO_TO_ONE, explain: "Mean over the queries of 1 / the image's rank." },
  "explain.median_rank": { label: "Median rank of the image", unit: "rank, 1 is best", explain: "Half of the queries find their image at this rank or better." },
  CA: { label: "CA: concept agreement", unit: ZERO_TO_ONE, explain: `The share of the image's concepts that the image ranked first has too. ${OVER_FAILURES}` },
  NCS: { label: "NCS: non-common concept similarity", unit: ZERO_TO_ONE, explain: `The concepts only one image has, matched one to one for the highest WordNet path similarity: their mean similarity (1: the same concept). ${OVER_FAILURES}` },
  CE: { label: "CE: concept enumeration", unit: "objects", explain: `Over the concepts both images have, the difference of their object counts, summed. ${OVER_FAILURES}` },
  SD: { label: "SD: size disagreement", unit: "share of the image", explain: `Per common concept, its objects matched one to one by area: the mean difference of their areas, summed over the concepts. ${OVER_FAILURES}` },
  SD_binary: { label: "Binary SD: objects over the threshold", unit: "matched objects", explain: `How many matched objects differ in area by more than the threshold (a share of the image, chosen with the evaluation). ${OVER_FAILURES}` },
  "adversarial.queries": { label: "Changed captions", unit: "count of queries", explain: "Captions with a word of this kind, each changed once." },
  "adversarial.falls": { label: "Ground truth falls", unit: "count of queries", explain: `Changed captions whose image is ranked lower than before. ${CHANGED}` },
  "adversarial.stays": { label: "Ground truth stays", unit: "count of queries", explain: `Changed captions whose image keeps its rank. ${CHANGED}` },
  "adversarial.rises": { label: "Ground truth rises", unit: "count of queries", explain: `Changed captions whose image is ranked higher than before. ${CHANGED}` },
};

// "change R@5", "change MRR@10" of the adversarial queries.
function changeInfo(metric) {
  const figure = metric.slice("change ".length);
  const recall = figure.startsWith("R@");
  return {
    label: `Change of ${recall ? "Recall" : "MRR"}@${figure.split("@")[1]}`,
    unit: recall ? "change, percentage points" : "change of MRR",
    explain: `${recall ? "Recall" : "MRR"}@${figure.split("@")[1]} after the change minus before it. ${CHANGED}`,
  };
}

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
  if (section === "adversarial" && metric.startsWith("change ")) return changeInfo(metric);
  const entry = METRICS[`${section}.${metric}`] || METRICS[metric];
  if (!entry) return { label: metric, unit: "", explain: "" };
  const means = section !== "explain" && ["R@1", "R@5", "R@10", "R-Precision", "mAP@R"].includes(metric);
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
  if (row.section === "explain") return `${EXPLAINED[row.task] || row.task} · ${row.task === "caption_to_corpus" ? "every caption a query" : "mean over the failures"}`;
  if (row.section === "adversarial") return `${SUBSTITUTIONS[row.task] || row.task} · over the changed captions`;
  if (row.section === "own_top_k") return `${task} · ${row.positives === "nothing rated yet" ? "nothing rated yet" : judgedBy(row.positives)}`;
  return `${task} · ${SOURCES[row.positives] ? `human scores from ${SOURCES[row.positives]}` : row.positives}`;
}

// A figure's value as shown: the number with its unit's sign, and its interval.
export function valueText(value, unit) {
  if (unit.startsWith("count")) return value.toLocaleString("en");
  const fine = unit === ZERO_TO_ONE || unit === "change of MRR" || unit === "share of the image";
  const text = value.toFixed(fine ? 3 : unit === "objects" || unit === "matched objects" ? 2 : 1);
  if (unit.startsWith("change")) return value > 0 ? `+${text}` : text;
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
