// Costs: spend by day as stacked bars, grouped by GPU type, capacity type, region, job name (or team, where the API
// groups by it), waste by reason beside it; the numbers are GET /costs' own, in the tables below the charts.

import { stackedBars } from "../charts.js";
import { api, h, money, problem, replace, table } from "../lib.js";

// The groups a day can be split by: the API's `by_<group>` keys of each day (a group it adds later shows up too).
const GROUP_WORDS = { gpu_type: "GPU type", capacity_type: "capacity type", region: "region", job_name: "job name", team: "team", owner: "owner" };

function isoDay(date) {
  return date.toISOString().slice(0, 10);
}

function groupsOf(report) {
  const keys = new Set(report.days.flatMap((day) => Object.keys(day).filter((key) => key.startsWith("by_")).map((key) => key.slice(3))));
  return Object.keys(GROUP_WORDS).filter((group) => keys.has(group) || !report.days.length);
}

function spendChart(report, group) {
  const labels = report.days.map((day) => day.date);
  const names = [...new Set(report.days.flatMap((day) => Object.keys(day[`by_${group}`] || {})))].sort();
  const series = Object.fromEntries(names.map((name) => [name, report.days.map((day) => (day[`by_${group}`] || {})[name] || 0)]));
  const summary = `Spend by day and ${GROUP_WORDS[group]}, ${report.from} to ${report.to}: ${money(report.total_usd)} in all`;
  return stackedBars(labels, series, { summary });
}

function wasteChart(waste) {
  const reasons = Object.keys(waste.by_reason);
  const summary = `Waste by reason: ${money(waste.usd)} in all` + reasons.map((r) => `, ${r} ${money(waste.by_reason[r])}`).join("");
  return stackedBars(reasons, { waste: reasons.map((r) => waste.by_reason[r]) }, { summary, horizontal: true });
}

function totals(report) {
  const card = (id, label, usd, note) => h("div", { class: "card" }, h("div", { class: "label" }, label),
    h("div", { class: "value", id, "data-usd": usd }, money(usd)), h("div", { class: "label" }, note));
  return h("div", { class: "cards" },
    card("costs-total", "Spent", report.total_usd, `${report.from} to ${report.to}`),
    card("costs-marginal", "Added to the bill", report.marginal_usd, "reserved capacity's room costs nothing more"),
    card("costs-waste", "Waste", report.waste.usd, "instances that served no job"));
}

export async function render(main) {
  const today = new Date();
  const from = h("input", { id: "costs-from", type: "date", value: isoDay(new Date(today.getTime() - 30 * 86400000)) });
  const to = h("input", { id: "costs-to", type: "date", value: isoDay(today) });
  const group = h("select", { id: "costs-group" }, Object.entries(GROUP_WORDS).slice(0, 4).map(([value, words]) => h("option", { value }, words)));
  const view = h("div", { id: "costs-view" }, h("p", { class: "muted" }, "Loading costs…"));
  main.append(
    h("h1", {}, "Costs"),
    h("form", { class: "toolbar", onsubmit: (event) => { event.preventDefault(); load(); } },
      h("label", {}, "From", from), h("label", {}, "To", to), h("label", {}, "Group by", group),
      h("button", { type: "submit" }, "Show")),
    view,
  );
  async function load() {
    const query = { from: from.value, to: to.value, group_by: group.value };
    const answer = await api("GET", "/costs", { query });
    if (!answer.ok) return replace(view, problem(answer, "Reading costs failed"));
    const report = answer.body;
    const offered = groupsOf(report);
    for (const option of [...group.options]) option.hidden = !offered.includes(option.value);
    for (const extra of offered) if (![...group.options].some((o) => o.value === extra)) group.append(h("option", { value: extra }, GROUP_WORDS[extra]));
    const words = GROUP_WORDS[group.value];
    const reasons = Object.entries(report.waste.by_reason).map(([reason, usd]) => ({ reason, usd }));
    replace(view, h("div", {},
      totals(report),
      h("div", { class: "split" },
        h("section", { "aria-labelledby": "spend-title" }, h("h2", { id: "spend-title" }, `Spend by day and ${words}`),
          report.days.length ? spendChart(report, group.value) : h("p", { class: "muted" }, "Nothing was spent in these days.")),
        h("section", { "aria-labelledby": "waste-title" }, h("h2", { id: "waste-title" }, "Waste by reason"),
          reasons.length ? wasteChart(report.waste) : h("p", { class: "muted" }, "No waste recorded in these days."))),
      h("div", { class: "split" },
        table({
          caption: `Spend by ${words}`,
          columns: [
            { label: words, cell: (g) => g.key },
            { label: "Region", cell: (g) => g.region || "several" },
            { label: "Attempts", num: true, cell: (g) => g.attempts },
            { label: "Cost", num: true, cell: (g) => h("span", { "data-usd": g.usd }, money(g.usd)) },
            { label: "Added to the bill", num: true, cell: (g) => money(g.marginal_usd) },
          ],
          rows: report.groups,
          rowKey: (g) => g.key,
          empty: "No priced attempt in these days.",
        }),
        table({
          caption: "Waste by reason",
          columns: [{ label: "Reason", cell: (r) => r.reason }, { label: "Cost", num: true, cell: (r) => h("span", { "data-usd": r.usd }, money(r.usd)) }],
          rows: reasons,
          rowKey: (r) => `waste:${r.reason}`,
          empty: "No waste.",
        })),
      table({
        caption: "Spend by day",
        columns: [{ label: "Day", cell: (d) => d.date }, { label: "Cost", num: true, cell: (d) => money(d.usd) }, { label: "Added to the bill", num: true, cell: (d) => money(d.marginal_usd) }],
        rows: report.days,
        empty: "No day with spend.",
      })));
  }
  group.addEventListener("change", load);
  await load();
}
