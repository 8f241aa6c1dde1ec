"""Write the API's OpenAPI document: `python -m gpupilot.openapi [PATH]` (default docs/openapi.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from functions.shared.api_contract import openapi_document

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"


def render() -> str:
    return json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    path.write_text(render())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
