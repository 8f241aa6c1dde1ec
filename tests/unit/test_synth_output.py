"""`make synth` prints what node says as text: jsii's runtime prints node's non-JSON stderr lines (the Node
end-of-life banner) as Python byte literals."""

from __future__ import annotations

import inspect
import io

from stacks.synth import ReadableStderr

BANNER = b"!!  Node 20 is end-of-life and not supported anymore by this software since 2026-10-30.  !!\n"


def test_a_printed_bytes_line_is_written_as_its_text_with_one_newline():
    # Given stderr as synth sets it
    out = io.StringIO()
    stderr = ReadableStderr(out)
    # When jsii prints a banner line as it does (print on the raw bytes), then ordinary text is written
    print(BANNER, file=stderr)
    print("synth failed: a reason", file=stderr)
    # Then the banner reads as text, and the rest is unchanged
    assert out.getvalue() == BANNER.decode() + "synth failed: a reason\n"


def test_jsii_still_prints_node_s_non_json_stderr_lines_as_bytes():
    # The reason ReadableStderr exists: if jsii decodes these lines itself one day, this fails and it can go.
    from jsii._kernel.providers import process

    source = inspect.getsource(process.stderr_sink)
    assert "print(line, file=sys.stderr)" in source
    assert 'iter(reader.readline, b"")' in source
