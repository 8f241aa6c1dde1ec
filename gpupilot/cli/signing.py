"""Which region a request to the API is signed for (SigV4, execute-api): a stage URL names its own."""

from __future__ import annotations

import os
import re


def endpoint_region(endpoint: str, configured: str | None = None) -> str:
    """The region a request is signed for: a stage URL's own, else the environment's or the profile's, else
    us-east-1 (the local cloud's default world)."""
    match = re.search(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", endpoint)
    if match:
        return match.group(1)
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or configured or "us-east-1"
