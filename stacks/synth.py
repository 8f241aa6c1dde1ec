"""`python -m stacks.synth`: `python app.py`, with what node says on stderr printed as text.

jsii's Python runtime relays node's stderr, and prints a line that is not one of its JSON messages (the Node
end-of-life banner: "Node 20 is end-of-life and not supported anymore by this software since ...") with
`print(line)` on the raw bytes, so it reads as Python byte literals (`b'!!  Node 20 is end-of-life ...\\n'`). That
banner is worth reading (it says which node versions are supported), so it is printed as the text it is rather
than silenced.
"""

from __future__ import annotations

import ast
import re
import runpy
import sys
from pathlib import Path
from typing import Any, TextIO

APP = Path(__file__).resolve().parents[1] / "app.py"
BYTES_LITERAL = re.compile(r"""b(['"]).*\1""", re.DOTALL)


class ReadableStderr:
    """A stderr that writes a printed bytes object (`b'...'`, then the newline `print` adds) as its text."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._newline_said = False

    def write(self, text: str) -> int:
        if self._newline_said and text == "\n":
            self._newline_said = False  # the line's own newline was written already
            return len(text)
        self._newline_said = False
        if BYTES_LITERAL.fullmatch(text):
            decoded = ast.literal_eval(text).decode("utf-8", errors="replace")
            self._stream.write(decoded)
            self._newline_said = decoded.endswith("\n")
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, buffer, isatty, encoding: the stream's own
        return getattr(self._stream, name)


def main() -> None:
    sys.stderr = ReadableStderr(sys.stderr)  # type: ignore[assignment]
    runpy.run_path(str(APP), run_name="__main__")


if __name__ == "__main__":
    main()
