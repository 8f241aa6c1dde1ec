"""Fetch the host agent this host's launch template pins, before its service starts (systemd's ExecStartPre, once
cloud-init is done: never in cloud-init's way). Standard library only, self-contained (the user data carries this
file): IMDSv2 for the account and the instance role's credentials, one Signature Version 4 GET from the deployment's
hosts bucket (`<prefix>-<account>-<home region>`, `agent/<sha256>.pyz`, the bucket's owner checked by S3 with
x-amz-expected-bucket-owner), the bytes held to the SHA-256 the user data names, then written whole. A failure exits
non-zero and systemd tries again (Restart=always).

    python3 bootstrap.py <bucket prefix> <home region> <sha256> <target>

The agent's own S3 and EventBridge client (aws.py) signs with `signed_headers` from here.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import sys
import urllib.parse
import urllib.request
from typing import NamedTuple

IMDS = os.environ.get("GPUPILOT_AGENT_IMDS", "http://169.254.169.254")


class Credentials(NamedTuple):
    access_key: str
    secret_key: str
    token: str | None = None
    expires: float | None = None


def signed_headers(
    method: str, url: str, region: str, service: str, headers: dict[str, str], payload_hash: str,
    credentials: Credentials, when: datetime.datetime,
) -> dict[str, str]:  # fmt: skip
    """`headers` and what Signature Version 4 adds (host, x-amz-date, the session token, Authorization), as "Create a
    signed AWS API request" (IAM User Guide) says. `url`'s path is sent as given, already URI-encoded once: S3's
    canonical URI; the other services here use `/`."""
    parts = urllib.parse.urlsplit(url)
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    sent = {k.lower(): " ".join(str(v).split()) for k, v in headers.items()}
    sent.update({"host": parts.netloc, "x-amz-date": amz_date})
    if credentials.token:
        sent["x-amz-security-token"] = credentials.token
    names = sorted(sent)
    query = sorted(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    canonical = "\n".join([
        method, parts.path or "/", "&".join(f"{_quote(k)}={_quote(v)}" for k, v in query),
        "".join(f"{name}:{sent[name]}\n" for name in names), ";".join(names), payload_hash,
    ])  # fmt: skip
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + credentials.secret_key).encode()
    for part in (amz_date[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    sent["authorization"] = (f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, "
                             f"SignedHeaders={';'.join(names)}, Signature={signature}")  # fmt: skip
    return sent


def _quote(text: str) -> str:
    return urllib.parse.quote(text, safe="-_.~")


def metadata(path: str, token: str | None = None, method: str = "GET") -> str:
    """An IMDSv2 answer (a session token with `method` PUT and path `api/token`)."""
    headers = {"X-aws-ec2-metadata-token-ttl-seconds": "21600"} if method == "PUT" else {}
    if token:
        headers["X-aws-ec2-metadata-token"] = token
    request = urllib.request.Request(f"{IMDS}/latest/{path}", method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=5) as answer:
        return str(answer.read().decode())


def role_credentials(token: str) -> Credentials:
    """The instance role's temporary credentials (instance metadata iam/security-credentials/<role>)."""
    role = metadata("meta-data/iam/security-credentials/", token).split()[0]
    found = json.loads(metadata(f"meta-data/iam/security-credentials/{role}", token))
    expires = datetime.datetime.strptime(found["Expiration"], "%Y-%m-%dT%H:%M:%SZ")
    return Credentials(found["AccessKeyId"], found["SecretAccessKey"], found.get("Token"),
                       expires.replace(tzinfo=datetime.timezone.utc).timestamp())  # fmt: skip


def object_url(bucket: str, region: str, key: str) -> str:
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "").rstrip("/")
    path = urllib.parse.quote(key, safe="/~")
    if endpoint:
        return f"{endpoint}/{bucket}/{path}"
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://{bucket}.s3.{region}.{domain}/{path}"


def fetch(prefix: str, region: str, digest: str, target: str) -> str:
    """Write the pinned agent to `target` (already there: nothing fetched); what was done, in a line."""
    if os.path.exists(target):
        with open(target, "rb") as present:
            if hashlib.sha256(present.read()).hexdigest() == digest:
                return f"{target} is the pinned agent already"
    token = metadata("api/token", method="PUT")
    account = json.loads(metadata("dynamic/instance-identity/document", token))["accountId"]
    bucket, key = f"{prefix}-{account}-{region}", f"agent/{digest}.pyz"
    url = object_url(bucket, region, key)
    empty = hashlib.sha256(b"").hexdigest()
    headers = {"x-amz-content-sha256": empty, "x-amz-expected-bucket-owner": account}
    when = datetime.datetime.now(datetime.timezone.utc)
    sent = signed_headers("GET", url, region, "s3", headers, empty, role_credentials(token), when)
    with urllib.request.urlopen(urllib.request.Request(url, headers=sent), timeout=60) as answer:
        body = answer.read()
    found = hashlib.sha256(body).hexdigest()
    if found != digest:
        raise ValueError(f"s3://{bucket}/{key} has SHA-256 {found}, not the pinned {digest}: not installed")
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target + ".part", "wb") as written:
        written.write(body)
    os.replace(target + ".part", target)
    return f"fetched s3://{bucket}/{key} to {target}"


if __name__ == "__main__":
    try:
        print(fetch(*sys.argv[1:5]))
    except Exception as error:  # systemd logs it and starts the unit again
        print(f"gpupilot host agent not fetched: {error}", file=sys.stderr)
        sys.exit(1)
