"""The web console that `gpupilot ui` serves on loopback: jobs and why they wait, a timeline per job, costs and waste,
the fleet's health, and a plan before submitting (docs/console.md).

The browser never holds AWS credentials: it talks to this package's server, which passes each call of an allow-listed
API route on through the CLI's own client (gpupilot/cli/client.py), which signs it as it signs every other command's.
The console adds no route to the deployed API and no permission to the stack.

server.py is the HTTP server (pages, assets, the allow-listed API calls and two local helpers); static/ holds the
pages' HTML, CSS and JavaScript modules, and the one vendored library (Chart.js, pinned, in static/vendor/). This
package may import gpupilot.cli's client, render and job_request modules; nothing in gpupilot.cli imports it but
the `ui` command.
"""
