"""The console's own calls (`/console/...`): what its pages need that the CLI already does, done by the CLI's code so
that the console and the CLI cannot say different things: where the API is, a job file read as `submit -f` reads it,
and the look before launch `submit` shows at a terminal."""

from __future__ import annotations

from typing import Any, Protocol

from gpupilot.cli import render
from gpupilot.cli.arguments import CliError
from gpupilot.cli.client import ApiResponse
from gpupilot.cli.job_request import REQUEST_DEFAULTS, job_file_body

Answer = tuple[int, dict[str, Any]]


class Api(Protocol):
    """What the console needs of the CLI's client (gpupilot.cli.client.ApiClient)."""

    endpoint: str

    @property
    def sign(self) -> bool: ...

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> ApiResponse: ...


def error_body(error: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The API's error shape, for the console's own refusals too."""
    return {"error": error, "field": field, "message": message}


def answer(api: Api, method: str, path: str, body: dict[str, Any]) -> Answer | None:
    """The answer to a console call, or None when there is no such call."""
    if (method, path) == ("GET", "/console/about"):
        return 200, {"endpoint": api.endpoint, "signed": api.sign}
    if (method, path) == ("POST", "/console/job-file"):
        return job_file(body)
    if (method, path) == ("POST", "/console/launch-summary"):
        return launch_summary(body)
    return None


def job_file(body: dict[str, Any]) -> Answer:
    """`{text}`, a pasted job file (YAML or JSON), as the request's fields: `{request}`."""
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        return 400, error_body("BadRequestBody", "text: paste a job file (YAML or JSON)", "text")
    try:
        return 200, {"request": job_file_body(text, "the job file")}
    except CliError as error:
        field = "text" if error.field == "--file" else error.field
        return 400, error_body(error.kind, error.message, field)


def launch_summary(body: dict[str, Any]) -> Answer:
    """`{candidates, warnings, max_attempts}` from a plan: `{summary}`, the lines `gpupilot submit` shows before it
    asks (the first choice and its price, the fallbacks the workflow may try, the warnings)."""
    candidates, warnings = body.get("candidates"), body.get("warnings", [])
    attempts = body.get("max_attempts") or REQUEST_DEFAULTS["max_attempts"]
    if not isinstance(candidates, list) or not all(isinstance(c, dict) for c in candidates):
        return 400, error_body("BadRequestBody", "candidates: the plan's candidates, a list of objects", "candidates")
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        return 400, error_body("BadRequestBody", "warnings: the plan's warnings, a list of strings", "warnings")
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
        return 400, error_body("BadRequestBody", "max_attempts: a whole number, 1 or more", "max_attempts")
    try:
        return 200, {"summary": render.launch_summary(candidates, warnings, attempts)}
    except (KeyError, TypeError, ValueError) as error:
        return 400, error_body("BadRequestBody", f"candidates: not a plan's candidates ({error})", "candidates")
