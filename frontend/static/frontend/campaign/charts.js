// Plotly figures of the campaign pages, built from the snapshot's JSON (the same numbers the
// tables beside the charts show). Pure: data in, {data, layout} out; page.js draws them.

const FONT = { family: "system-ui, sans-serif", size: 12, color: "#1d2430" };
// Colour-blind-safe (Okabe-Ito), one per series in the order they come.
export const COLOURS = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442"];

function layout(extra) {
  return {
    font: FONT,
    margin: { l: 52, r: 12, t: 28, b: 44 },
    height: 280,
    paper_bgcolor: "#fff",
    plot_bgcolor: "#fff",
    // Above the plot, so it never covers the x axis title.
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
    ...extra,
  };
}

function centres(edges) {
  return edges.slice(0, -1).map((low, i) => (low + edges[i + 1]) / 2);
}

function widths(edges) {
  return edges.slice(0, -1).map((low, i) => edges[i + 1] - low);
}

function histogramTraces(entries, name, { share = false } = {}) {
  return entries.map((entry, i) => {
    const total = entry.counts.reduce((a, b) => a + b, 0) || 1;
    return {
      type: "bar",
      name: name(entry),
      x: centres(entry.bin_edges),
      y: share ? entry.counts.map((c) => c / total) : entry.counts,
      width: widths(entry.bin_edges).map((w) => w * (entries.length > 1 ? 0.9 / entries.length : 0.9)),
      marker: { color: COLOURS[i % COLOURS.length] },
      hovertemplate: share ? "%{x:.3f}: %{y:.1%}<extra>%{fullData.name}</extra>" : "%{x:.3f}: %{y}<extra>%{fullData.name}</extra>",
    };
  });
}

// Daily numbers: one tick per day while they fit, never hour ticks between days.
const DAY_MS = 86_400_000;
function dayAxis(dates, title) {
  const span = dates.length ? (Date.parse(dates.at(-1)) - Date.parse(dates[0])) / DAY_MS + 1 : 1;
  return { type: "date", tickformat: "%b %-d", dtick: span <= 14 ? DAY_MS : undefined, title: { text: title } };
}

const scoreAxis = (title) => ({ title: { text: title }, range: [0, 5], dtick: 0.5 });

export const builders = {
  ratings_per_day(charts) {
    const rows = charts.ratings_per_day;
    return {
      data: [{ type: "bar", x: rows.map((r) => r.date), y: rows.map((r) => r.ratings), marker: { color: COLOURS[0] }, name: "ratings" }],
      layout: layout({ xaxis: dayAxis(rows.map((r) => r.date), "day (UTC)"), yaxis: { title: { text: "ratings" }, rangemode: "tozero" }, showlegend: false }),
    };
  },

  ratings_per_hour_today(charts) {
    const rows = charts.ratings_per_hour_today;
    return {
      data: [{ type: "bar", x: rows.map((r) => r.hour), y: rows.map((r) => r.ratings), marker: { color: COLOURS[0] }, name: "ratings" }],
      layout: layout({ xaxis: { title: { text: "hour (UTC)" }, dtick: 2, range: [-0.5, 23.5] }, yaxis: { title: { text: "ratings" }, rangemode: "tozero" }, showlegend: false }),
    };
  },

  pair_means(charts, kind) {
    const entries = charts.pair_mean_histograms.filter((h) => h.kind === kind);
    return {
      data: histogramTraces(entries, (h) => h.method),
      layout: layout({ barmode: "group", xaxis: scoreAxis("mean score of the pair"), yaxis: { title: { text: "pairs" } } }),
    };
  },

  pair_sds(charts) {
    const label = Object.fromEntries(charts.kinds.map((k) => [k.kind, k.label]));
    const entries = charts.pair_sd_histograms;
    return {
      data: histogramTraces(entries, (h) => label[h.kind] ?? h.kind),
      layout: layout({ barmode: "group", xaxis: { title: { text: "standard deviation of the pair's ratings" } }, yaxis: { title: { text: "pairs" } } }),
    };
  },

  positive_share(charts) {
    const label = Object.fromEntries(charts.kinds.map((k) => [k.kind, k.label]));
    const rows = charts.positive_share;
    return {
      // Horizontal bars: the method names stay readable at any width.
      data: [{
        type: "bar",
        orientation: "h",
        y: rows.map((r) => `${label[r.kind] ?? r.kind} ${r.method}`),
        x: rows.map((r) => r.share),
        marker: { color: rows.map((r) => COLOURS[charts.kinds.findIndex((k) => k.kind === r.kind) % COLOURS.length]) },
        hovertemplate: "%{y}: %{x:.1%}<extra></extra>",
      }],
      layout: layout({
        xaxis: { title: { text: "share of complete pairs that are positive" }, range: [0, 1], tickformat: ".0%" },
        yaxis: { automargin: true, autorange: "reversed" },
        showlegend: false,
        margin: { l: 12, r: 16, t: 8, b: 44 },
      }),
    };
  },

  reliability(charts) {
    // Per kind: the Spearman-Brown curve (line) and the halves measured (dots); a half of k
    // ratings against another is the reliability of the mean of k ratings, on the same axes.
    const label = Object.fromEntries(charts.kinds.map((k) => [k.kind, k.label]));
    const data = charts.reliability_by_kind.flatMap((c) => {
      const colour = COLOURS[charts.kinds.findIndex((k) => k.kind === c.kind) % COLOURS.length];
      const name = label[c.kind] ?? c.kind;
      return [
        { type: "scatter", mode: "lines", x: c.predicted.map((p) => p.raters), y: c.predicted.map((p) => p.reliability), line: { color: colour }, name: `${name} (Spearman-Brown)`, hovertemplate: "N=%{x}: %{y:.2f}<extra></extra>" },
        { type: "scatter", mode: "markers", x: c.measured.map((m) => m.raters), y: c.measured.map((m) => m.correlation), marker: { color: colour, size: 9 }, name: `${name} (halves measured)`, hovertemplate: "%{x} vs %{x}: %{y:.2f}<extra></extra>" },
      ];
    });
    // Halves that disagree more than chance measure below 0: the axis reaches down to show them.
    const lowest = Math.min(0, ...charts.reliability_by_kind.flatMap((c) => c.measured.map((m) => m.correlation)));
    return {
      data,
      layout: layout({ xaxis: { title: { text: "ratings per pair (N)" }, dtick: 1 }, yaxis: { title: { text: "reliability of the mean" }, range: [lowest - 0.05, 1] } }),
    };
  },

  score_histogram(charts) {
    const h = charts.score_histogram;
    const entries = [
      { bin_edges: h.bin_edges, counts: h.counts, who: "this rater" },
      { bin_edges: h.bin_edges, counts: h.everyone_counts, who: "everyone" },
    ];
    return {
      data: histogramTraces(entries, (e) => e.who, { share: true }),
      layout: layout({ barmode: "group", xaxis: scoreAxis("score"), yaxis: { title: { text: "share of ratings" }, tickformat: ".0%" } }),
    };
  },

  seconds_over_time(charts) {
    const rows = charts.seconds_over_time;
    return {
      data: [{ type: "scatter", mode: "lines+markers", x: rows.map((r) => r.date), y: rows.map((r) => r.median_seconds), line: { color: COLOURS[0] }, name: "median s" }],
      layout: layout({ xaxis: dayAxis(rows.map((r) => r.date), "day (UTC)"), yaxis: { title: { text: "median seconds per item" }, rangemode: "tozero" }, showlegend: false }),
    };
  },

  loo_over_time(charts) {
    const rows = charts.loo_over_time;
    return {
      data: [{ type: "scatter", mode: "lines+markers", x: rows.map((r) => r.date), y: rows.map((r) => r.loo_correlation), line: { color: COLOURS[2] }, connectgaps: false, name: "LOO r" }],
      layout: layout({ xaxis: dayAxis(rows.map((r) => r.date), "day (UTC)"), yaxis: { title: { text: "LOO correlation" }, range: [-1, 1] }, showlegend: false }),
    };
  },
};
