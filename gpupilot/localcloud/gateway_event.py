"""The event API Gateway (REST, Lambda proxy integration) sends the api function for a request, as the local API
builds it."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


def proxy_event(
    method: str, raw_path: str, headers: dict[str, str], body: str | None, identity: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The event API Gateway (REST, Lambda proxy) would send for this request (`identity`: the caller IAM
    authorization found, sigv4.identity_of)."""
    parts = urlsplit(raw_path)
    query = parse_qs(parts.query, keep_blank_values=True)
    # API Gateway hands the function URL-decoded paths; an encoded "/" stays inside its segment.
    path = "/".join(unquote(segment).replace("/", "%2F") for segment in parts.path.split("/"))
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": None,
        "stageVariables": None,
        "body": body,
        "isBase64Encoded": False,
        "requestContext": {
            "resourcePath": path,
            "httpMethod": method,
            "path": f"/local{path}",
            "stage": "local",
            "requestId": str(uuid.uuid4()),
            "identity": identity or {"sourceIp": "127.0.0.1", "userAgent": headers.get("User-Agent", "")},
        },
    }
