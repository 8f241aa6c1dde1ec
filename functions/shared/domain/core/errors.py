"""Domain errors: what can go wrong in terms the API and the workflow understand."""

from __future__ import annotations

from typing import Any


class JobNotFound(Exception):
    """No job with this id."""


class JobAlreadyExists(Exception):
    """A job with this id exists already."""


class JobAlreadyFinished(Exception):
    """The job has ended; it cannot be cancelled."""


class IdempotencyKeyReused(Exception):
    """An Idempotency-Key used before with another body."""


class IdempotencyInProgress(Exception):
    """The first call with this Idempotency-Key is still running."""


class InvalidPageToken(Exception):
    """A next_token this API did not issue."""


class AttemptNotFound(Exception):
    """The job has no attempt of that number (yet)."""

    def __init__(self, job_id: str, attempt: int, attempts: int) -> None:
        super().__init__(f"job {job_id} has no attempt {attempt}" + (f" (1 to {attempts})" if attempts else " yet"))
        self.attempts = attempts


class SweepNotFound(Exception):
    """No health sweep with this id."""


class RequestRefused(Exception):
    """The request is well formed but this deployment cannot accept it; `field` names why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


NO_OFFERING = "no GPU offering can serve this request"


class NoCandidate(Exception):
    """No GPU offering can serve the request (within what it agreed to pay): a 400 with every offering left out and
    why, the cheapest fix first; nothing starts. `headline` says which."""

    def __init__(self, rejected: list[Any], field: str, message: str, headline: str = NO_OFFERING) -> None:
        super().__init__(message)
        self.rejected = rejected
        self.field = field
        self.message = message
        self.headline = headline


class SignalUnavailable(Exception):
    """A market signal (a quota, a price, a placement score) could not be read: AWS refused the call or it failed
    past botocore's retries. Selection ranks without it; it never fails a plan."""

    def __init__(self, operation: str, code: str, message: str = "") -> None:
        super().__init__(f"{operation}: {code}" + (f" ({message})" if message else ""))
        self.operation = operation
        self.code = code


class PurchaseDisabled(Exception):
    """This deployment does not let the API buy Capacity Blocks (its context switch is off: no grant exists)."""


class PurchaseInProgress(Exception):
    """A purchase of this offering was claimed already: a Capacity Block is bought once."""


def aws_error_parts(error: Exception) -> tuple[str, str]:
    """A failed AWS call's code and message: AWS's (a botocore ClientError carries them in its `response`; no code
    said: "ClientError"), else the SDK's error class and text (no answer came back: the endpoint, the network)."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        details = response.get("Error", {})
        return str(details.get("Code") or "ClientError"), str(details.get("Message", ""))
    return type(error).__name__, str(error)


def aws_failure_words(error: Exception) -> str:
    """An AWS call's failure in one line, `code: message`."""
    code, message = aws_error_parts(error)
    return f"{code}: {message or error}"[:500]


# The codes AWS answers a call its caller's policies do not allow with: EC2's own, and the other services'.
REFUSED_CODES = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException")


def call_failure_words(what: str, error: Exception) -> str:
    """`<what> was refused: <code>: <message>` when AWS refused the call on its caller's permissions (the message names
    the action and the resource, and why), else `<what> failed: <code>: <message>`."""
    code, _ = aws_error_parts(error)
    return f"{what} {'was refused' if code in REFUSED_CODES else 'failed'}: {aws_failure_words(error)}"


class Forbidden(Exception):
    """The caller may not do this: it is in no team, or its role does not allow the action (a 403 that says which)."""

    def __init__(self, message: str, principal: str | None = None, role: str | None = None, action: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.principal = principal
        self.role = role
        self.action = action


class BudgetExceeded(Exception):
    """The job's worst-case cost does not fit what is left of its team's budget (a 403 with the figures: `refusal`, a
    teams.budget.BudgetRefusal)."""

    def __init__(self, refusal: Any) -> None:
        super().__init__(getattr(refusal, "message", str(refusal)))
        self.refusal = refusal


class BudgetFull(Exception):
    """A team's budget ledger refused a commitment (its conditional write failed): the use case says why."""


class CommitmentChanged(Exception):
    """A job's commitment changed between its read and a write conditional on it: read it again."""
