"""The local cloud's HTTP API as the benches' clients call it: plain JSON over urllib, no retries, so what a bench
times is the API's own answer."""

from __future__ import annotations

import json
import urllib.request
from typing import Any


def get_json(url: str, timeout: float = 30) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.loads(answer.read())


def post_json(url: str, body: dict[str, Any], timeout: float = 30) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read())
