// What every page shares: calls to the console's server, building elements (never from HTML strings: every word
// the API gives is text), the words and numbers the CLI uses, tables, and a refresh that keeps the keyboard's place.

export const FINISHED = ["SUCCEEDED", "FAILED", "CANCELLED"];
export const STATUSES = ["SUBMITTED", "SELECTING", "PROVISIONING", "RUNNABLE", "STARTING", "RUNNING", ...FINISHED];
// Batch's own words when another GPU type (or an operator) must cure the wait: such a job is stuck, not slow.
const VERDICTS = /^(CAPACITY:|MISCONFIGURATION:|ACTION_REQUIRED)/;

async function call(url, method, body, headers) {
  const options = { method, headers: { "X-GpuPilot-Console": "1", Accept: "application/json", ...headers } };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, options);
  } catch (error) {
    return { ok: false, status: 0, body: { error: "ConsoleUnreachable", field: null, message: "gpupilot ui is not answering: is it still running?" } };
  }
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = { error: "Error", field: null, message: text }; }
  return { ok: response.ok, status: response.status, body: parsed };
}

/** A call of the HTTP API, through the console's server (which signs it): {ok, status, body}. */
export function api(method, path, { body, query, headers } = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") params.set(name, value);
  }
  const search = params.toString();
  return call(`/api${path}${search ? `?${search}` : ""}`, method, body, headers);
}

/** A call of the console's own helpers (`/console/...`). */
export function helper(method, path, body) {
  return call(`/console${path}`, method, body, {});
}

/** An element: h("a", {href: "/"}, "Jobs"); attributes starting "on" are listeners; false and null are left out. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** Dollars as the CLI shows them: four significant digits below a dollar, cents above. */
export function money(usd) {
  if (usd === null || usd === undefined) return "—";
  if (usd === 0) return "$0";
  if (Math.abs(usd) >= 1) return `$${usd.toFixed(2)}`;
  return `$${Number(usd.toPrecision(4))}`;
}

export function perHour(usd) {
  return usd === null || usd === undefined ? "unpriced" : `${money(usd)}/h`;
}

/** A time from the API (ISO 8601 UTC) in the reader's time zone: the time alone today, with its date otherwise. */
export function when(iso) {
  if (!iso) return "—";
  const at = new Date(iso);
  const today = new Date().toDateString() === at.toDateString();
  const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
  return today ? time : `${at.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
}

export function badge(word, kind = word) {
  return h("span", { class: `badge ${kind}` }, word);
}

/** Since when a job has waited in its current status (its latest timeline entry). */
export function waitingSince(job) {
  const last = job.timeline[job.timeline.length - 1];
  return last ? new Date(last.at) : new Date(job.created_at);
}

/** A job that will not start by itself soon: RUNNABLE with Batch's verdict, or past its stuck_after_minutes. */
export function isStuck(job, now = new Date()) {
  if (job.status !== "RUNNABLE") return false;
  const minutes = (now - waitingSince(job)) / 60000;
  return VERDICTS.test(job.reason || "") || minutes >= (job.request?.stuck_after_minutes ?? 15);
}

/** What the workflow does next for a waiting job, and when, in words. */
export function nextActionWords(job) {
  const next = job.next_action;
  if (!next) return null;
  const at = when(next.at);
  if (next.action === "fall_back") return `falls back to ${next.candidate || "its next candidate"} at ${at}`;
  if (next.action === "give_up") return `gives up at ${at} (no candidate left)`;
  return `diagnosed again at ${at}`;
}

/** A job's cost so far: its attempts' recorded costs (an attempt is priced when it ends). */
export function costSoFar(job) {
  const priced = job.attempts.filter((attempt) => attempt.cost);
  if (job.cost && FINISHED.includes(job.status)) return job.cost.usd;
  return priced.length ? priced.reduce((sum, attempt) => sum + attempt.cost.usd, 0) : null;
}

/**
 * A table: columns [{label, cell(row) -> node or text, num}], rows; `empty` when there are none. Each row may name
 * a key (`rowKey(row)`) that a refresh uses to give the keyboard focus back to the same row's control.
 */
export function table({ caption, columns, rows, empty, rowClass, rowKey }) {
  if (!rows.length) return h("p", { class: "muted empty" }, empty);
  const head = h("tr", {}, columns.map((column) => h("th", { scope: "col", class: column.num ? "num" : null }, column.label)));
  const body = rows.map((row) =>
    h(
      "tr",
      { class: rowClass ? rowClass(row) : null, "data-key": rowKey ? rowKey(row) : null },
      columns.map((column) => h("td", { class: column.num ? "num" : column.nowrap ? "nowrap" : null }, column.cell(row))),
    ),
  );
  return h("div", { class: "scroll" }, h("table", {}, caption ? h("caption", {}, caption) : null, h("thead", {}, head), h("tbody", {}, body)));
}

/** An object's keys and values, as a description list (nested values as JSON). */
export function keyValues(object) {
  const entries = Object.entries(object || {}).filter(([, value]) => value !== null && value !== undefined);
  if (!entries.length) return h("p", { class: "muted" }, "none");
  return h("dl", { class: "kv" }, entries.map(([key, value]) => [
    h("dt", {}, key.replaceAll("_", " ")),
    h("dd", {}, typeof value === "object" ? JSON.stringify(value) : String(value)),
  ]));
}

/** The API's refusal or failure, said as it said it (its error, the field at fault, its message). */
export function problem(answer, doing) {
  const body = answer.body || {};
  const field = body.field ? ` [${body.field}]` : "";
  return h("div", { class: "panel alert", role: "alert" },
    h("strong", {}, `${doing}: ${body.error || `HTTP ${answer.status}`}${field}`), " ", body.message || "");
}

/** Put `node` in `container`'s place, giving the keyboard focus back to the same control if it was inside. */
export function replace(container, node) {
  const focused = document.activeElement;
  const inside = container.contains(focused) && focused !== container;
  const key = inside ? focused.closest("[data-key]")?.dataset.key : null;
  const tag = inside ? focused.tagName : null;
  container.replaceChildren(node);
  if (key) container.querySelector(`[data-key="${CSS.escape(key)}"] ${tag.toLowerCase()}`)?.focus();
}

/** Run `refresh` now and every `seconds` while the page is shown, until it answers false. */
export function every(seconds, refresh) {
  let timer = null;
  const tick = async () => {
    timer = null;
    const more = await refresh();
    if (more !== false) timer = setTimeout(tick, seconds * 1000);
  };
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && timer === null) tick();
  });
  return tick();
}

/** Say something for a few seconds (read out by screen readers: the notice is a live region). */
export function notice(text) {
  const box = document.getElementById("notice");
  box.textContent = text;
  setTimeout(() => { if (box.textContent === text) box.textContent = ""; }, 6000);
}

/** A modal question; resolves true when `yes` is chosen. The safe answer has the focus first. */
export function confirmDialog(title, content, yes, no = "Back") {
  return new Promise((resolve) => {
    const dialog = h("dialog", { "aria-labelledby": "dialog-title" },
      h("h2", { id: "dialog-title" }, title), content,
      h("div", { class: "actions" },
        h("button", { type: "button", autofocus: true, onclick: () => dialog.close("no") }, no),
        h("button", { type: "button", class: yes.danger ? "danger" : "primary", onclick: () => dialog.close("yes") }, yes.label)));
    dialog.addEventListener("close", () => { dialog.remove(); resolve(dialog.returnValue === "yes"); });
    document.body.append(dialog);
    dialog.showModal();
  });
}
