// Plan: a request from a form (or a pasted job file, which the form's fields override, as flags override `-f`),
// planned by POST /plan: its candidates, prices and rejections; then submitted after the same look before launch
// `gpupilot submit` gives at a terminal, with an Idempotency-Key so that a retried submit is one job.

import { api, confirmDialog, h, helper, money, perHour, problem, replace, table } from "../lib.js";

const FIELDS = [
  { name: "name", label: "Name", placeholder: "train" },
  { name: "image", label: "Image", placeholder: "nvidia/cuda:12.4.1-base-ubuntu22.04" },
  { name: "command", label: "Command", placeholder: "python train.py", hint: "split at spaces; a job file for quoting" },
  { name: "gpus", label: "GPUs", type: "number", min: 1, max: 8 },
  { name: "gpu_models", label: "GPU models", placeholder: "L4, A10G", hint: "preference order, commas between" },
  { name: "capacity", label: "Capacity", choices: ["", "on-demand", "spot", "spot-first", "reserved"] },
  { name: "max_hourly_usd", label: "Most per hour (USD)", type: "number", step: "any", min: 0 },
  { name: "stuck_after_minutes", label: "Stuck after (minutes)", type: "number", step: "any", min: 0 },
];

function control(field) {
  const id = `field-${field.name}`;
  const input = field.choices
    ? h("select", { id, name: field.name }, field.choices.map((c) => h("option", { value: c }, c || "default (on-demand)")))
    : h("input", { id, name: field.name, type: field.type || "text", placeholder: field.placeholder, min: field.min, max: field.max, step: field.step, autocomplete: "off", "aria-describedby": `${id}-error` });
  return h("label", { for: id }, field.label, field.hint ? h("span", { class: "muted" }, ` (${field.hint})`) : null, input,
    h("span", { class: "field-error", id: `${id}-error` }));
}

/** The form's fields that were filled in, as the request's fields. */
function formFields(form) {
  const body = {};
  for (const field of FIELDS) {
    const value = form.elements[field.name].value.trim();
    if (!value) continue;
    if (field.type === "number") body[field.name] = Number(value);
    else if (field.name === "command") body.command = value.split(/\s+/);
    else if (field.name === "gpu_models") body.gpu_models = value.split(",").map((m) => m.trim()).filter(Boolean);
    else body[field.name] = value;
  }
  return body;
}

function planView(plan) {
  return [
    plan.warnings.length ? h("div", { class: "panel" }, h("h2", {}, "Warnings"), h("ul", {}, plan.warnings.map((w) => h("li", {}, w)))) : null,
    table({
      caption: "Candidates, best first (the order the attempts take)",
      columns: [
        { label: "#", num: true, cell: (c) => plan.candidates.indexOf(c) + 1 },
        { label: "GPU type", cell: (c) => c.instance_type },
        { label: "GPUs", cell: (c) => `${c.gpus} x ${c.gpu_model} (${c.gpu_memory_gib} GiB)` },
        { label: "Capacity", cell: (c) => [c.capacity_type || c.capacity, c.reservation ? h("span", { class: "next" }, c.reservation) : null] },
        { label: "Region", cell: (c) => [c.region, h("span", { class: "next" }, c.zones.join(", "))] },
        { label: "Price for this job", num: true, cell: (c) => perHour(c.hourly_usd) },
        { label: "Added to the bill", num: true, cell: (c) => perHour(c.marginal_hourly_usd) },
        { label: "Why", cell: (c) => h("div", { class: "why" }, c.why) },
      ],
      rows: plan.candidates,
      empty: "No candidate: nothing can serve this request (see why below).",
    }),
    h("details", {}, h("summary", {}, `Left out, and why: ${plan.rejected.length}`), table({
      caption: "Left out, and why",
      columns: [{ label: "GPU type", cell: (r) => r.instance_type }, { label: "Region", cell: (r) => r.region || "—" }, { label: "Reason", cell: (r) => h("div", { class: "why" }, r.reason) }],
      rows: plan.rejected,
      empty: "Nothing was left out.",
    })),
  ];
}

export async function render(main) {
  const jobFile = h("textarea", { id: "job-file", name: "job_file", rows: 7, placeholder: "name: train\nimage: nvidia/cuda:12.4.1-base-ubuntu22.04\ncommand: [python, train.py]\ngpus: 1", "aria-describedby": "field-job_file-error" });
  const form = h("form", { class: "form", id: "plan-form", novalidate: true },
    FIELDS.map(control),
    h("details", { class: "wide" }, h("summary", {}, "Or paste a job file (YAML or JSON; the fields above override it)"),
      h("label", { for: "job-file" }, "Job file", jobFile, h("span", { class: "field-error", id: "field-job_file-error" }))),
    h("div", { class: "actions wide" }, h("button", { type: "submit", class: "primary" }, "Plan")));
  const result = h("div", { id: "plan-result" });
  main.append(h("h1", {}, "Plan a job"), h("p", { class: "muted" }, "Nothing is launched until you submit, after a look at what would start."), form, result);

  const clearErrors = () => form.querySelectorAll(".field-error").forEach((span) => { span.textContent = ""; });
  const refuse = (answer, doing) => {
    const field = (answer.body?.field || "").split(".")[0];
    const span = document.getElementById(`field-${field === "text" ? "job_file" : field}-error`);
    if (span) span.textContent = answer.body.message;
    replace(result, problem(answer, doing));
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    let request = {};
    if (jobFile.value.trim()) {
      const read = await helper("POST", "/job-file", { text: jobFile.value });
      if (!read.ok) return refuse(read, "The job file was refused");
      request = read.body.request;
    }
    request = { ...request, ...formFields(form) };
    const answer = await api("POST", "/plan", { body: request });
    if (!answer.ok) return refuse(answer, "The plan was refused");
    const plan = answer.body;
    const key = `gpupilot-console-${crypto.randomUUID ? crypto.randomUUID() : Date.now()}`;
    const submit = h("button", { type: "button", class: "primary", id: "submit-job", disabled: Boolean(plan.refusal) || !plan.candidates.length }, "Submit this job…");
    submit.addEventListener("click", () => submitJob(request, plan, key));
    replace(result, h("div", {},
      plan.refusal ? problem({ status: 400, body: plan.refusal }, "Submitting this would be refused") : null,
      h("h2", {}, `${plan.candidates.length} candidate${plan.candidates.length === 1 ? "" : "s"}, first ${plan.candidates[0] ? `${plan.candidates[0].instance_type} at ${money(plan.candidates[0].hourly_usd)}/h` : "none"}`),
      h("div", { class: "actions" }, submit),
      planView(plan)));
  });

  async function submitJob(request, plan, key) {
    const said = await helper("POST", "/launch-summary", { candidates: plan.candidates, warnings: plan.warnings, max_attempts: request.max_attempts });
    if (!said.ok) return refuse(said, "The plan could not be summed up");
    const sure = await confirmDialog("Submit this job?", h("pre", { class: "summary" }, said.body.summary), { label: "Submit" }, "Not now");
    if (!sure) return;
    const answer = await api("POST", "/jobs", { body: request, headers: { "Idempotency-Key": key } });
    if (!answer.ok) return refuse(answer, "The submit was refused");
    window.location.assign(`/jobs/${encodeURIComponent(answer.body.job_id)}`);
  }
}
