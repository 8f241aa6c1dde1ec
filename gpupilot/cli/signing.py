"""What a request to the API is signed with (SigV4, execute-api): the credentials, and the region (a stage URL names
its own)."""

from __future__ import annotations

import os
import re
from typing import Any


def endpoint_region(endpoint: str, configured: str | None = None) -> str:
    """The region a request is signed for: a stage URL's own, else the environment's or the profile's, else
    us-east-1 (the local cloud's default world)."""
    match = re.search(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", endpoint)
    if match:
        return match.group(1)
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or configured or "us-east-1"


def resolve_credentials(loopback: bool) -> tuple[Any, Any]:
    """A botocore session and the credentials its standard chain resolves (None when it finds none)."""
    import botocore.session

    session = botocore.session.get_session()
    if loopback:
        # The local cloud: the environment and the profiles only (asking an instance's metadata service, absent
        # here, would cost every command a time-out).
        resolver = session.get_component("credential_provider")
        for provider in ("container-role", "iam-role"):
            resolver.remove(provider)
    return session, session.get_credentials()
