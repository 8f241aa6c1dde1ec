"""Errors the workflow retries: AWS throttling and server faults that outlast botocore's own retries."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import ClientError, ConnectionError, ReadTimeoutError

TRANSIENT_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "RequestThrottled",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "ServerException",
    }
)

F = TypeVar("F", bound=Callable[..., Any])


class TransientAwsError(Exception):
    """An AWS call failed for a reason that time cures; the ASL retries it with jittered backoff."""


def is_transient(error: Exception) -> bool:
    if isinstance(error, ConnectionError | ReadTimeoutError):
        return True
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in TRANSIENT_CODES or status >= 500
    return False


def retry_transient(handler: F) -> F:
    """Raise TransientAwsError for transient AWS failures, so Step Functions retries them by name."""

    @functools.wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        except Exception as error:
            if is_transient(error):
                raise TransientAwsError(str(error)) from error
            raise

    return wrapper  # type: ignore[return-value]
