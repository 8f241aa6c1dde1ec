"""SigV4 on the local cloud's API, as API Gateway's IAM authorization checks it: with the world's `identities`, every
request must be signed (service `execute-api`, the home region) with one of their access keys.

An unsigned request is refused `403 MissingAuthenticationToken`, a badly signed one (an unknown key, another
region or service, a signature that does not match the request, a date more than 15 minutes off) `403
InvalidSignature`, in the API's error shape (API Gateway answers the same refusals with its own `message` body and an
`x-amzn-ErrorType` header, which the local cloud sends too). A verified request's event carries the identity in
`requestContext.identity` as API Gateway's does: `userArn`, `accessKey`, `accountId`, `caller`, `user`.

The signature is recomputed with botocore's own SigV4 signer over the request as it arrived (method, path, query,
the headers the client signed, the body), at the time the client signed it.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

SERVICE = "execute-api"
MAX_SKEW_SECONDS = 15 * 60
AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<headers>[^,]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)


@dataclass(frozen=True)
class Principal:
    name: str
    arn: str
    access_key_id: str
    secret_access_key: str


class Refused(Exception):
    """Why a request is not authenticated: its error (API Gateway's type) and words."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class SigV4Verifier:
    """Verifies requests against the identities' keys, in `region`."""

    def __init__(self, principals: list[Principal], region: str) -> None:
        self._by_key = {p.access_key_id: p for p in principals}
        self._region = region

    def verify(
        self, method: str, raw_path: str, host: str, headers: Mapping[str, str], body: bytes | None
    ) -> Principal:
        """The principal that signed the request (Refused: unsigned, or badly signed)."""
        lowered = {name.lower(): value for name, value in headers.items()}
        authorization = lowered.get("authorization")
        if not authorization:
            raise Refused("MissingAuthenticationToken", "Missing Authentication Token: sign the request (SigV4)")
        found = AUTHORIZATION.match(authorization.strip())
        if found is None:
            raise Refused("InvalidSignature", "the Authorization header is not an AWS4-HMAC-SHA256 signature")
        principal = self._by_key.get(found["key"])
        if principal is None:
            raise Refused("InvalidSignature", f"the access key {found['key']} is not one of this cloud's identities")
        if (found["region"], found["service"]) != (self._region, SERVICE):
            raise Refused("InvalidSignature", f"the credential scope must be {self._region}/{SERVICE}, "
                          f"not {found['region']}/{found['service']}")  # fmt: skip
        stamp = lowered.get("x-amz-date", "")
        try:
            signed_at = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise Refused("InvalidSignature", "the request has no X-Amz-Date the signature covers") from None
        if abs((datetime.now(UTC) - signed_at).total_seconds()) > MAX_SKEW_SECONDS or stamp[:8] != found["date"]:
            raise Refused("InvalidSignature", "Signature expired: the request was signed more than 15 minutes away")
        signed = found["headers"].split(";")
        if "host" not in signed:
            raise Refused("InvalidSignature", "the signature must cover the Host header")
        expected = _signature(principal, method, raw_path, host, lowered, signed, body, stamp, self._region)
        if not hmac.compare_digest(expected, found["signature"]):
            raise Refused("InvalidSignature", "The request signature we calculated does not match the signature you "
                          "provided. Check your AWS Secret Access Key and signing method.")  # fmt: skip
        return principal


def _signature(
    principal: Principal,
    method: str,
    raw_path: str,
    host: str,
    headers: Mapping[str, str],
    signed: list[str],
    body: bytes | None,
    stamp: str,
    region: str,
) -> str:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    values = {name: headers.get(name, host if name == "host" else "") for name in signed}
    request = AWSRequest(method=method, url=f"http://{host}{raw_path}", data=body or b"", headers=values)
    request.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(principal.access_key_id, principal.secret_access_key), SERVICE, region)
    canonical = signer.canonical_request(request)
    return str(signer.signature(signer.string_to_sign(request, canonical), request))


def identity_of(principal: Principal | None, source_ip: str, user_agent: str) -> dict[str, Any]:
    """`requestContext.identity` as API Gateway gives it to a function behind IAM authorization."""
    identity: dict[str, Any] = {"sourceIp": source_ip, "userAgent": user_agent}
    if principal is not None:
        account = principal.arn.split(":")[4]
        identity |= {
            "userArn": principal.arn,
            "accessKey": principal.access_key_id,
            "accountId": account,
            "caller": principal.access_key_id,
            "user": principal.access_key_id,
        }
    return identity
