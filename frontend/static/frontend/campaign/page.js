// Draws every [data-chart] element of a campaign page from the JSON the page embeds, and
// makes tables marked data-sortable sortable. Plotly is loaded by a classic <script> before.
import { builders } from "./charts.js";
import { makeSortable } from "./table.js";

const PLOT_CONFIG = { responsive: true, displaylogo: false, displayModeBar: false };
// Pages without charts (the rater table) embed no data and do not load Plotly.
const chartData = document.getElementById("campaign-charts");
const charts = chartData ? JSON.parse(chartData.textContent) : null;

// A chart with no points says so in its middle rather than showing bare axes.
function isEmpty(data) {
  return data.every((trace) => !(trace.x ?? []).length || (trace.y ?? []).every((v) => v === 0 || v === null));
}

function withNothingYet(layout) {
  const note = { text: "Nothing yet", showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5, font: { size: 15, color: "#5a6472" } };
  const bare = { visible: false };
  return { ...layout, xaxis: bare, yaxis: bare, showlegend: false, annotations: [note] };
}

for (const element of document.querySelectorAll("[data-chart]")) {
  const build = builders[element.dataset.chart];
  if (!build) throw new Error(`no chart named ${element.dataset.chart}`);
  const { data, layout } = build(charts, element.dataset.kind);
  window.Plotly.newPlot(element, data, isEmpty(data) ? withNothingYet(layout) : layout, PLOT_CONFIG);
}

for (const table of document.querySelectorAll("table[data-sortable]")) makeSortable(table);
