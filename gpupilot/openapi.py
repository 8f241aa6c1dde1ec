"""Write the API's OpenAPI document: `python -m gpupilot.openapi [--local] [PATH]` (default docs/openapi.json;
with --local, the local cloud's document, which has no security requirement, to PATH or stdout)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from functions.shared.api.openapi import openapi_document

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"


def render(local: bool = False) -> str:
    return json.dumps(openapi_document(local=local), indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    local = "--local" in argv
    paths = [arg for arg in argv if arg != "--local"]
    if local and not paths:
        sys.stdout.write(render(local=True))
        return 0
    path = Path(paths[0]) if paths else DEFAULT_PATH
    path.write_text(render(local=local))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
