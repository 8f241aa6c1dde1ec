// A job: its timeline as a chart (a bar per attempt, a segment per status) with the reason at each change, why it waits
// (diagnosis, evidence, recommendation), each attempt's cost, its logs (followed while it runs), and cancel.

import { timelineChart } from "../charts.js";
import {
  api, badge, confirmDialog, costSoFar, duration, every, FINISHED, h, isStuck, keyValues, money, nextActionWords,
  notice, perHour, problem, replace, table, when,
} from "../lib.js";

const REFRESH_SECONDS = 3;
const LOG_POLL_SECONDS = 2;

/**
 * The timeline cut into attempts: a new attempt starts at each PROVISIONING after the first (a fallback); the
 * statuses before the first (SUBMITTED, SELECTING) belong to attempt 1's bar. Times in seconds since submitted.
 */
export function attemptBars(job, now = new Date()) {
  const start = new Date(job.created_at).getTime();
  const seconds = (iso) => (new Date(iso).getTime() - start) / 1000;
  const bars = [];
  let current = null;
  job.timeline.forEach((entry, index) => {
    if (!current || (entry.status === "PROVISIONING" && current.provisioned)) {
      current = { segments: [], provisioned: false };
      bars.push(current);
    }
    if (entry.status === "PROVISIONING") current.provisioned = true;
    if (FINISHED.includes(entry.status)) {
      current.ended = entry;
      return;
    }
    const next = job.timeline[index + 1];
    const to = next ? seconds(next.at) : FINISHED.includes(job.status) ? seconds(entry.at) : (now.getTime() - start) / 1000;
    current.segments.push({ status: entry.status, from: seconds(entry.at), to, reason: entry.reason });
  });
  return bars.map((bar, index) => {
    const attempt = job.attempts[index];
    const ended = bar.ended ? bar.ended.status : attempt && index < job.attempts.length - 1 ? "fell back" : job.status;
    const label = `${index + 1}: ${attempt ? `${attempt.instance_type} ${attempt.capacity_type || attempt.capacity}` : "choosing"}`;
    return { label, segments: bar.segments, ended, attempt };
  });
}

function timelineSection(job) {
  const bars = attemptBars(job);
  const summary = `Timeline of job ${job.name}: ` + bars.map((bar) =>
    `attempt ${bar.label}, ${bar.segments.map((s) => `${s.status} ${(s.to - s.from).toFixed(1)} s`).join(", ")}, ${bar.ended}`).join("; ");
  let attemptNumber = 0;
  const changes = job.timeline.map((entry, index) => {
    if (entry.status === "PROVISIONING") attemptNumber += 1;
    return { ...entry, attempt: Math.max(attemptNumber, 1), index };
  });
  return [
    h("h2", {}, "Timeline"),
    timelineChart(bars, summary),
    table({
      caption: "Each change of status, and its reason",
      columns: [
        { label: "At", cell: (e) => when(e.at) },
        { label: "Attempt", num: true, cell: (e) => e.attempt },
        { label: "Status", cell: (e) => badge(e.status) },
        { label: "Reason", cell: (e) => h("div", { class: "why" }, e.reason || "", e.reason_at ? h("span", { class: "next" }, `said at ${when(e.reason_at)}`) : null) },
      ],
      rows: changes,
      empty: "No status yet.",
    }),
  ];
}

function diagnosisBlock(title, diagnosis) {
  return h("div", { class: "panel" },
    h("h3", {}, title, " ", badge(diagnosis.category, "warning")),
    h("p", {}, diagnosis.reason),
    diagnosis.recommendation ? h("p", {}, h("strong", {}, "Recommendation: "), diagnosis.recommendation) : null,
    h("details", {}, h("summary", {}, "Evidence"), keyValues(diagnosis.evidence)));
}

function whySection(job, explain) {
  const waiting = !FINISHED.includes(job.status) && job.status !== "RUNNING";
  const latest = [...job.attempts].reverse().find((attempt) => attempt.diagnosis);
  const next = nextActionWords(job);
  return [
    h("h2", {}, waiting ? "Why it waits" : "Diagnosis"),
    waiting ? h("div", { class: isStuck(job) ? "panel alert" : "panel" },
      h("p", {}, isStuck(job) ? [badge("stuck", "stuck"), " "] : null, job.reason || "No reason given yet (Batch gives none while it scales up)."),
      next ? h("p", {}, h("strong", {}, "Next: "), next) : null,
      h("button", { type: "button", onclick: explain }, "Diagnose now")) : null,
    job.explanation ? diagnosisBlock("Diagnosed now", job.explanation) : null,
    latest ? diagnosisBlock(`Attempt ${job.attempts.indexOf(latest) + 1} (${latest.instance_type})`, latest.diagnosis) : null,
    !waiting && !latest ? h("p", { class: "muted" }, job.error || "Nothing to diagnose: no attempt waited past its time.") : null,
  ];
}

function attemptsSection(job) {
  return [
    h("h2", {}, "Attempts and their cost"),
    table({
      caption: "Each attempt, in order",
      columns: [
        { label: "#", num: true, cell: (a) => job.attempts.indexOf(a) + 1 },
        { label: "GPU type", cell: (a) => a.instance_type },
        { label: "Capacity", nowrap: true, cell: (a) => [a.capacity_type || a.capacity, a.reservation ? h("span", { class: "next" }, a.reservation) : null] },
        { label: "Region", nowrap: true, cell: (a) => a.region || "—" },
        { label: "Status", cell: (a) => [badge(a.status), a.exit_code !== null ? h("span", { class: "next" }, `exit ${a.exit_code}`) : null] },
        { label: "Reason", cell: (a) => h("div", { class: "why" }, a.diagnosis?.category || a.container_reason || a.status_reason || "", a.host_terminations.map((t) => h("span", { class: "next" }, t))) },
        { label: "Runtime", num: true, cell: (a) => duration(a.cost?.runtime_seconds) },
        { label: "Rate", num: true, cell: (a) => (a.cost ? perHour(a.cost.hourly_usd) : "—") },
        { label: "Cost", num: true, cell: (a) => (a.cost ? money(a.cost.usd) : "—") },
        { label: "Added to the bill", num: true, cell: (a) => (a.cost ? money(a.cost.marginal_usd) : "—") },
      ],
      rows: job.attempts,
      empty: "No attempt yet: the job is choosing its GPU type.",
    }),
  ];
}

function header(job, cancel) {
  const finished = FINISHED.includes(job.status);
  return [
    h("h1", {}, job.name, " ", badge(job.status), isStuck(job) ? [" ", badge("stuck", "stuck")] : null),
    h("div", { class: "cards" },
      h("div", { class: "card" }, h("div", { class: "label" }, "GPU type"), h("div", { class: "value" }, job.instance_type || "—"), h("div", { class: "label" }, [job.gpu_model, job.region].filter(Boolean).join(", "))),
      h("div", { class: "card" }, h("div", { class: "label" }, "Cost so far"), h("div", { class: "value" }, money(costSoFar(job))), h("div", { class: "label" }, `${job.attempts.length} attempt${job.attempts.length === 1 ? "" : "s"}`)),
      h("div", { class: "card" }, h("div", { class: "label" }, "Submitted"), h("div", { class: "value" }, when(job.created_at)), h("div", { class: "label" }, job.job_id)),
      job.team || job.owner ? h("div", { class: "card" }, h("div", { class: "label" }, "Owner / team"), h("div", { class: "value" }, job.team || "—"), h("div", { class: "label" }, job.owner || "")) : null),
    job.error ? h("p", {}, h("strong", {}, "Error: "), job.error) : null,
    finished ? null : h("div", { class: "actions" }, h("button", { type: "button", class: "danger", id: "cancel", onclick: cancel }, "Cancel job")),
  ];
}

function logsSection(job, state) {
  const select = h("select", { id: "log-attempt" }, h("option", { value: "" }, "latest that ran"),
    job.attempts.map((a, i) => h("option", { value: String(i + 1), selected: state.attempt === String(i + 1) }, `${i + 1}: ${a.instance_type}`)));
  select.addEventListener("change", () => {
    state.attempt = select.value;
    state.reset();
  });
  return [
    h("h2", {}, "Logs"),
    h("div", { class: "toolbar" }, h("label", {}, "Attempt", select), h("span", { class: "muted", id: "log-source" }, state.source)),
    state.pre,
  ];
}

/** The attempt's log stream, read page after page; following while the job runs. */
function logFollower() {
  const state = { attempt: "", token: null, stream: null, source: "", pre: h("pre", { class: "logs", id: "logs", tabindex: "0", "aria-label": "Logs" }) };
  state.reset = () => { state.token = null; state.stream = null; state.pre.textContent = ""; };
  state.read = async (jobId) => {
    const answer = await api("GET", `/jobs/${encodeURIComponent(jobId)}/logs`, { query: { attempt: state.attempt, next_token: state.token } });
    if (!answer.ok) {
      state.source = answer.body?.message || `no logs (HTTP ${answer.status})`;
      return;
    }
    const page = answer.body;
    if (page.log_stream !== state.stream) {
      if (state.stream !== null) state.pre.textContent = "";
      state.stream = page.log_stream;
    }
    state.source = page.log_stream ? `attempt ${page.attempt} (${page.attempt_status}): ${page.log_group} ${page.log_stream}` : `attempt ${page.attempt} has not run yet`;
    const lines = page.events.map((event) => event.message).join("\n");
    if (lines) state.pre.textContent += (state.pre.textContent ? "\n" : "") + lines;
    state.token = page.next_token || state.token;
  };
  return state;
}

export async function render(main, jobId) {
  const path = `/jobs/${encodeURIComponent(jobId)}`;
  const top = h("div", { id: "job-top" });
  const body = h("div", { id: "job-body" });
  main.append(h("p", {}, h("a", { href: "/" }, "← All jobs")), top, body);
  const logs = logFollower();
  let job = null;
  let explained = null;
  const draw = () => {
    replace(top, h("div", {}, header(job, cancel)));
    replace(body, h("div", {}, whySection(explained || job, explain), timelineSection(job), attemptsSection(job), logsSection(job, logs)));
    document.title = `${job.name} · GPU Pilot`;
  };
  const refresh = async () => {
    const answer = await api("GET", path);
    if (!answer.ok) {
      replace(top, problem(answer, `Reading job ${jobId} failed`));
      return answer.status !== 404;
    }
    job = answer.body;
    if (explained && explained.status !== job.status) explained = null;
    await logs.read(jobId);
    draw();
    return !FINISHED.includes(job.status);
  };
  async function explain() {
    const answer = await api("GET", path, { query: { explain: "true" } });
    if (!answer.ok) return notice(answer.body?.message || "the diagnosis failed");
    explained = answer.body;
    job = answer.body;
    draw();
  }
  async function cancel() {
    const sure = await confirmDialog(`Cancel job ${job.name}?`,
      h("p", {}, `Job ${job.job_id} stops: its workflow ends and its Batch job is terminated. This cannot be undone.`),
      { label: "Cancel job", danger: true }, "Keep it running");
    if (!sure) return;
    const answer = await api("DELETE", path);
    notice(answer.ok ? `Cancelled ${job.name}` : `${answer.body?.error}: ${answer.body?.message}`);
    await refresh();
  }
  await every(REFRESH_SECONDS, refresh);
  // Logs keep coming while it runs: read them more often than the job.
  const follow = async () => {
    if (!job || FINISHED.includes(job.status)) return;
    await logs.read(jobId);
    document.getElementById("log-source").textContent = logs.source;
    setTimeout(follow, LOG_POLL_SECONDS * 1000);
  };
  setTimeout(follow, LOG_POLL_SECONDS * 1000);
}
