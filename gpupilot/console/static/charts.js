// The two kinds of chart the console draws, with Chart.js (loaded before the modules as the global `Chart`): a job's
// timeline (one bar per attempt, a segment per status) and stacked bars (spend by day; waste by reason). Each chart
// is an image with a summary for screen readers; the numbers themselves are in the tables beside it.

import { h } from "./lib.js";

// One colour per status, each at least 3:1 against white (WCAG's contrast for the parts of a chart).
export const STATUS_COLOURS = {
  SUBMITTED: "#57606a",
  SELECTING: "#8250df",
  PROVISIONING: "#9a6700",
  RUNNABLE: "#bc4c00",
  STARTING: "#0969da",
  RUNNING: "#1a7f37",
};
// Series colours for groups (GPU types, capacity types, ...): distinct, each 3:1 against white.
const SERIES = ["#0969da", "#bc4c00", "#1a7f37", "#8250df", "#cf222e", "#9a6700", "#1b7c83", "#bf3989", "#57606a"];
const FONT = { family: "system-ui, sans-serif", size: 12 };
const TEXT = "#1f2328";

function chartBox(kind, label, height) {
  const canvas = h("canvas", { role: "img", "aria-label": label });
  return { box: h("div", { class: `chart ${kind}`, style: null }, canvas), canvas, height };
}

function mount(box, height) {
  if (height) box.style.height = `${height}px`;
}

/**
 * A job's timeline: `attempts` [{label, segments: [{status, from, to, reason}]}], times in seconds since the job was
 * submitted. Returns the element; the chart is drawn once it is in the page.
 */
export function timelineChart(attempts, summary) {
  const { box, canvas } = chartBox("timeline", summary);
  mount(box, 70 + 48 * attempts.length);
  const statuses = Object.keys(STATUS_COLOURS).filter((status) =>
    attempts.some((attempt) => attempt.segments.some((segment) => segment.status === status)));
  const reasons = new Map();
  const datasets = statuses.map((status) => ({
    label: status,
    backgroundColor: STATUS_COLOURS[status],
    borderSkipped: false,
    grouped: false,
    barPercentage: 0.7,
    data: attempts.flatMap((attempt) => attempt.segments
      .filter((segment) => segment.status === status)
      .map((segment) => {
        reasons.set(`${status}|${attempt.label}|${segment.from}`, segment.reason);
        return { x: [segment.from, Math.max(segment.to, segment.from + 0.05)], y: attempt.label };
      })),
  }));
  requestAnimationFrame(() => new Chart(canvas, {
    type: "bar",
    data: { labels: attempts.map((attempt) => attempt.label), datasets },
    options: {
      indexAxis: "y",
      animation: false,
      maintainAspectRatio: false,
      scales: {
        x: { type: "linear", min: 0, title: { display: true, text: "seconds since submitted", color: TEXT, font: FONT }, ticks: { color: TEXT, font: FONT } },
        y: { stacked: true, ticks: { color: TEXT, font: FONT } },
      },
      plugins: {
        legend: { position: "bottom", labels: { color: TEXT, font: FONT, boxWidth: 14 } },
        tooltip: {
          callbacks: {
            label: (item) => {
              const [from, to] = item.raw.x;
              const reason = reasons.get(`${item.dataset.label}|${item.raw.y}|${from}`);
              const span = `${item.dataset.label} ${from.toFixed(1)}–${to.toFixed(1)} s`;
              return reason ? [span, reason] : span;
            },
          },
        },
      },
    },
  }));
  return box;
}

/** Stacked bars: `labels` along the axis, `series` {name: [value per label]}; `horizontal` for few long labels. */
export function stackedBars(labels, series, { summary, horizontal = false, axisTitle = "US dollars" } = {}) {
  const { box, canvas } = chartBox("bars", summary);
  const names = Object.keys(series);
  const valueAxis = { stacked: true, beginAtZero: true, title: { display: true, text: axisTitle, color: TEXT, font: FONT }, ticks: { color: TEXT, font: FONT } };
  const labelAxis = { stacked: true, ticks: { color: TEXT, font: FONT } };
  requestAnimationFrame(() => new Chart(canvas, {
    type: "bar",
    data: {
      labels,
      datasets: names.map((name, index) => ({ label: name, data: series[name], backgroundColor: SERIES[index % SERIES.length] })),
    },
    options: {
      indexAxis: horizontal ? "y" : "x",
      animation: false,
      maintainAspectRatio: false,
      scales: horizontal ? { x: valueAxis, y: labelAxis } : { x: labelAxis, y: valueAxis },
      plugins: { legend: { position: "bottom", labels: { color: TEXT, font: FONT, boxWidth: 14 } } },
    },
  }));
  return box;
}
