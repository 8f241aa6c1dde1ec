// The console's one entry point: which page the address names, the navigation's current page, and the API's address.

import { helper } from "./lib.js";

const ROUTES = [
  [/^\/$/, "jobs", () => import("./pages/jobs.js")],
  [/^\/jobs\/([^/]+)$/, "jobs", () => import("./pages/job.js")],
  [/^\/costs$/, "costs", () => import("./pages/costs.js")],
  [/^\/fleet$/, "fleet", () => import("./pages/fleet.js")],
  [/^\/plan$/, "plan", () => import("./pages/plan.js")],
];

async function start() {
  const main = document.getElementById("page");
  const path = window.location.pathname;
  const [pattern, section, load] = ROUTES.find(([route]) => route.test(path)) || [];
  for (const link of document.querySelectorAll("nav a")) {
    if (link.dataset.page === section && (path === link.getAttribute("href") || section === "jobs")) {
      link.setAttribute("aria-current", "page");
    }
  }
  helper("GET", "/about").then((answer) => {
    if (answer.ok) {
      const signed = answer.body.signed ? " (signed with your AWS credentials)" : "";
      document.getElementById("endpoint").textContent = `API ${answer.body.endpoint}${signed}`;
    }
  });
  if (!load) {
    main.textContent = "No such page.";
    return;
  }
  const page = await load();
  const params = path.match(pattern).slice(1).map(decodeURIComponent);
  main.replaceChildren();
  await page.render(main, ...params);
}

start();
