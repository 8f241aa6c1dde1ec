// Jobs: every job, newest first, refreshed every few seconds: its status, why it waits and what happens next, where it
// runs and what it has cost; a stuck job stands out. Filters by status (asked of the API), name and team.

import { api, badge, costSoFar, every, h, isStuck, money, nextActionWords, problem, replace, STATUSES, table, when } from "../lib.js";

const REFRESH_SECONDS = 3;
const PAGE_SIZE = 100;

function whyItWaits(job) {
  const words = job.reason || job.explanation?.reason;
  const next = nextActionWords(job);
  if (!words && !next) return job.status === "FAILED" && job.error ? job.error : "";
  return [words || "", next ? h("span", { class: "next" }, next) : null];
}

function where(job) {
  const last = job.attempts[job.attempts.length - 1];
  return {
    type: job.instance_type ? `${job.instance_type}${job.gpu_model ? ` (${job.gpu_model})` : ""}` : "—",
    capacity: last?.capacity_type || last?.capacity || job.request.capacity,
    region: job.region || last?.region || "—",
  };
}

function columns(withTeams) {
  const shown = [
    { label: "Job", cell: (job) => [h("a", { href: `/jobs/${encodeURIComponent(job.job_id)}` }, job.name), h("span", { class: "next" }, job.job_id)] },
    { label: "Status", cell: (job) => [badge(job.status), isStuck(job) ? [" ", badge("stuck", "stuck")] : null] },
    { label: "Why it waits", cell: (job) => h("div", { class: "why" }, whyItWaits(job)) },
    { label: "GPU type", nowrap: true, cell: (job) => where(job).type },
    { label: "Region", nowrap: true, cell: (job) => where(job).region },
    { label: "Capacity", nowrap: true, cell: (job) => where(job).capacity },
    { label: "Cost so far", num: true, cell: (job) => money(costSoFar(job)) },
  ];
  if (withTeams) shown.push({ label: "Owner / team", cell: (job) => [job.team || "", job.owner ? h("span", { class: "next" }, job.owner) : null] });
  shown.push({ label: "Submitted", cell: (job) => when(job.created_at) });
  return shown;
}

export async function render(main) {
  const status = h("select", { id: "filter-status", name: "status" }, h("option", { value: "" }, "any"), STATUSES.map((s) => h("option", { value: s }, s)));
  const name = h("input", { id: "filter-name", name: "name", type: "search", placeholder: "part of a name", autocomplete: "off" });
  const team = h("select", { id: "filter-team", name: "team" }, h("option", { value: "" }, "any"));
  const teamLabel = h("label", { hidden: true }, "Team", team);
  const counts = h("p", { class: "muted", id: "job-counts" });
  const list = h("div", { id: "job-list" }, h("p", { class: "muted" }, "Loading jobs…"));
  main.append(
    h("h1", {}, "Jobs"),
    h("form", { class: "toolbar", role: "search", onsubmit: (event) => event.preventDefault() },
      h("label", {}, "Status", status), h("label", {}, "Name", name), teamLabel),
    counts,
    list,
  );
  let jobs = [];
  let failure = null;
  const show = () => {
    const teams = [...new Set(jobs.map((job) => job.team).filter(Boolean))].sort();
    teamLabel.hidden = !teams.length;
    for (const known of teams) if (![...team.options].some((o) => o.value === known)) team.append(h("option", { value: known }, known));
    const needle = name.value.trim().toLowerCase();
    const shown = jobs.filter((job) => (!needle || job.name.toLowerCase().includes(needle)) && (!team.value || job.team === team.value));
    const stuck = shown.filter((job) => isStuck(job)).length;
    const waiting = shown.filter((job) => !["SUCCEEDED", "FAILED", "CANCELLED", "RUNNING"].includes(job.status)).length;
    counts.textContent = jobs.length ? `${shown.length} shown: ${waiting} waiting, ${stuck} stuck` : "";
    const filtered = status.value || needle || team.value;
    const empty = filtered
      ? "No job matches these filters."
      : "No jobs yet. Plan and submit one on the Plan page, or with gpupilot submit.";
    replace(list, failure || table({
      caption: "Jobs, newest first",
      columns: columns(teams.length > 0),
      rows: shown,
      empty,
      rowKey: (job) => job.job_id,
      rowClass: (job) => (isStuck(job) ? "stuck" : null),
    }));
  };
  const refresh = async () => {
    const answer = await api("GET", "/jobs", { query: { status: status.value, limit: PAGE_SIZE } });
    failure = answer.ok ? null : problem(answer, "Listing jobs failed");
    if (answer.ok) jobs = answer.body.jobs;
    show();
  };
  status.addEventListener("change", refresh);
  name.addEventListener("input", show);
  team.addEventListener("change", show);
  await every(REFRESH_SECONDS, refresh);
}
