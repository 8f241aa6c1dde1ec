"""Transient AWS failures become TransientAwsError, which the ASL retries by name."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from functions.shared.adapters.transient import TransientAwsError, retry_transient


def _client_error(code: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")


@pytest.mark.parametrize(("code", "status"), [("ThrottlingException", 400), ("TooManyRequestsException", 429),
                                              ("SomethingNew", 503)])  # fmt: skip
def test_throttling_and_server_faults_are_raised_as_transient(code: str, status: int) -> None:
    @retry_transient
    def handler() -> None:
        raise _client_error(code, status)

    with pytest.raises(TransientAwsError) as raised:
        handler()
    assert isinstance(raised.value.__cause__, ClientError)


def test_client_mistakes_and_domain_errors_pass_through_unchanged() -> None:
    @retry_transient
    def handler(error: Exception) -> None:
        raise error

    with pytest.raises(ClientError):
        handler(_client_error("ValidationException"))
    with pytest.raises(KeyError):
        handler(KeyError("x"))


def test_a_handler_that_succeeds_returns_its_result() -> None:
    assert retry_transient(lambda value: value * 2)(21) == 42
