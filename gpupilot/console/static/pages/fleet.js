// Fleet: the last sweep's findings by severity, the pools they name and their states, quarantined hosts with their
// evidence, the capacity regions, and the reservations with their idle hours; a sweep can be started from here.

import { api, badge, h, keyValues, money, notice, problem, replace, table, when } from "../lib.js";

const SEVERITIES = ["critical", "warning", "info"];
const SWEEP_WAIT_SECONDS = 120;

function findingsSection(report) {
  const bySeverity = (severity) => report.findings.filter((finding) => finding.severity === severity);
  return [
    h("h2", {}, "Findings by severity"),
    h("div", { class: "cards" }, SEVERITIES.map((severity) =>
      h("div", { class: "card" }, h("div", { class: "label" }, severity), h("div", { class: "value", "data-severity": severity }, bySeverity(severity).length)))),
    SEVERITIES.filter((severity) => bySeverity(severity).length).map((severity) => table({
      caption: `${severity[0].toUpperCase()}${severity.slice(1)} findings`,
      columns: [
        { label: "Kind", cell: (f) => badge(f.kind, severity) },
        { label: "Resource", cell: (f) => [f.resource, f.region ? h("span", { class: "next" }, f.region) : null] },
        { label: "Jobs", num: true, cell: (f) => f.jobs.length },
        { label: "Recommendation", cell: (f) => h("div", { class: "why" }, f.recommendation) },
        { label: "Done", cell: (f) => h("div", { class: "why" }, f.action || "nothing") },
        { label: "Evidence", cell: (f) => h("details", {}, h("summary", {}, "show"), keyValues(f.evidence)) },
      ],
      rows: bySeverity(severity),
      rowKey: (f) => `${f.kind}|${f.resource}`,
      empty: "",
    })),
    report.findings.length ? null : h("p", { class: "muted" }, "No findings: the last sweep found nothing wrong."),
  ];
}

// Pools as the findings name them (a pool with nothing to report is in none): each pool's kinds and worst severity.
function poolsSection(report) {
  const pools = new Map();
  for (const finding of report.findings.filter((f) => f.resource.startsWith("gpupilot-"))) {
    const pool = pools.get(finding.resource) || { name: finding.resource, region: finding.region, kinds: [], severity: "info", jobs: new Set(), instances: new Set() };
    pool.kinds.push(finding.kind);
    if (SEVERITIES.indexOf(finding.severity) < SEVERITIES.indexOf(pool.severity)) pool.severity = finding.severity;
    finding.jobs.forEach((job) => pool.jobs.add(job));
    finding.instances.forEach((instance) => pool.instances.add(instance));
    pools.set(finding.resource, pool);
  }
  return [h("h2", {}, "Pools"), table({
    caption: "Pools the last sweep reported on",
    columns: [
      { label: "Pool", cell: (p) => p.name },
      { label: "Region", cell: (p) => p.region || "—" },
      { label: "State", cell: (p) => [badge(p.severity), " ", p.kinds.join(", ")] },
      { label: "Jobs waiting", num: true, cell: (p) => p.jobs.size },
      { label: "Instances named", num: true, cell: (p) => p.instances.size },
    ],
    rows: [...pools.values()],
    empty: "No pool was reported on.",
  })];
}

function hostsSection(report) {
  const hosts = report.findings.filter((f) => f.kind === "BAD_GPU_HOST");
  return [h("h2", {}, "Quarantined hosts"), table({
    caption: "Hosts quarantined for failing jobs on their own account",
    columns: [
      { label: "Instance", cell: (f) => f.evidence.instance || f.instances.join(", ") },
      { label: "Pool", cell: (f) => f.resource },
      { label: "Reason", cell: (f) => f.evidence.reason || "—" },
      { label: "Jobs hit", cell: (f) => (f.evidence.jobs_hit || []).join(", ") || "—" },
      { label: "Quarantined", cell: (f) => when(f.evidence.quarantined_at) },
      { label: "Done", cell: (f) => h("div", { class: "why" }, f.action || "—") },
      { label: "Evidence", cell: (f) => h("details", {}, h("summary", {}, "show"), keyValues(f.evidence)) },
    ],
    rows: hosts,
    empty: "No host is quarantined.",
  })];
}

function regionsSection(report, reservations) {
  const regions = new Map();
  const region = (name) => regions.get(name) || regions.set(name, { name, findings: 0, reservations: 0, problem: null }).get(name);
  report.findings.filter((f) => f.region).forEach((f) => {
    region(f.region).findings += 1;
    if (f.kind === "REGION_UNREACHABLE") region(f.region).problem = f.evidence.error || "unreachable";
  });
  (reservations?.reservations || []).forEach((r) => { if (r.region) region(r.region).reservations += 1; });
  Object.entries(reservations?.left_out || {}).forEach(([name, why]) => { region(name).problem = why; });
  return [h("h2", {}, "Regions"),
    h("p", { class: "muted" }, `The last sweep swept ${report.summary.regions ?? "?"} capacity region${report.summary.regions === 1 ? "" : "s"}.`),
    table({
      caption: "Capacity regions the sweep and the reservations name",
      columns: [
        { label: "Region", cell: (r) => r.name },
        { label: "State", cell: (r) => (r.problem ? [badge("unreachable", "critical"), " ", r.problem] : badge("answering", "info")) },
        { label: "Findings", num: true, cell: (r) => r.findings },
        { label: "Reservations", num: true, cell: (r) => r.reservations },
      ],
      rows: [...regions.values()],
      empty: "No region named yet.",
    })];
}

function reservationsSection(answer) {
  if (!answer.ok) return [h("h2", {}, "Reservations"), problem(answer, "Reading reservations failed")];
  const list = answer.body;
  const idleHours = (r) => (r.hourly_usd ? r.idle_usd / r.hourly_usd : null);
  return [h("h2", {}, "Reservations"),
    h("p", { class: "muted" }, `Their idle hours have cost ${money(list.idle_usd)}, as the sweeps recorded.`),
    table({
      caption: "Capacity Reservations and Capacity Blocks",
      columns: [
        { label: "Reservation", cell: (r) => [r.reservation_id, r.capacity_block ? h("span", { class: "next" }, "Capacity Block") : null] },
        { label: "GPU type", cell: (r) => `${r.instance_type} in ${r.zone}` },
        { label: "State", cell: (r) => r.state },
        { label: "In use", num: true, cell: (r) => `${r.in_use} of ${r.total}` },
        { label: "Idle now", num: true, cell: (r) => r.idle },
        { label: "Ends", cell: (r) => when(r.ends_at) },
        { label: "Idle hours", num: true, cell: (r) => (idleHours(r) === null ? "—" : idleHours(r).toFixed(2)) },
        { label: "Idle cost", num: true, cell: (r) => money(r.idle_usd) },
      ],
      rows: list.reservations,
      empty: "The account holds no reservation.",
    })];
}

export async function render(main) {
  const view = h("div", { id: "fleet-view" }, h("p", { class: "muted" }, "Loading the last sweep…"));
  const sweep = h("button", { type: "button", id: "sweep" }, "Sweep now");
  main.append(h("h1", {}, "Fleet"), h("div", { class: "actions" }, sweep), view);
  async function load(sweepId) {
    const [health, reservations] = await Promise.all([api("GET", "/health", { query: { sweep_id: sweepId } }), api("GET", "/reservations")]);
    if (!health.ok) return replace(view, problem(health, "Reading the last sweep failed"));
    const report = health.body;
    const swept = report.swept_at ? `Sweep ${report.sweep_id}, ${report.status}, at ${when(report.swept_at)}` : "No sweep has completed yet.";
    replace(view, h("div", {},
      h("p", { id: "sweep-said" }, swept, report.error ? ` (${report.error})` : ""),
      findingsSection(report), poolsSection(report), hostsSection(report),
      regionsSection(report, reservations.ok ? reservations.body : null), reservationsSection(reservations)));
    return report;
  }
  sweep.addEventListener("click", async () => {
    sweep.disabled = true;
    const started = await api("POST", "/sweep");
    if (!started.ok) {
      notice(`The sweep was refused: ${started.body?.message}`);
      sweep.disabled = false;
      return;
    }
    notice(`Sweep ${started.body.sweep_id} started`);
    const deadline = Date.now() + SWEEP_WAIT_SECONDS * 1000;
    let report = null;
    while (Date.now() < deadline && (!report || report.status === "RUNNING")) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      report = await load(started.body.sweep_id);
    }
    notice(report ? `Sweep ${started.body.sweep_id}: ${report.status}` : "The sweep did not finish in time");
    sweep.disabled = false;
    sweep.focus();
  });
  await load();
}
