"""`gpupilot ui`: the web console on loopback, against whatever the CLI targets (gpupilot/console/)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading

from gpupilot.cli.arguments import EXIT_OK, CommandAdder, UsageError, port_number
from gpupilot.cli.client import ApiClient

DEFAULT_PORT = 8780

EXAMPLES = {
    "ui": """
  gpupilot ui                                     # the console for the local cloud
  gpupilot ui --port 0                            # any free port (printed)
  gpupilot --endpoint https://abc.execute-api.us-east-1.amazonaws.com/v1 ui""",
}


def add_command(command: CommandAdder) -> None:
    """The `ui` command and its flag."""
    ui = command("ui", help="serve the web console on loopback (jobs, a job's timeline, costs, fleet, plan)")
    ui.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"the console's port (0: any free port; default {DEFAULT_PORT})",
    )


def ui(client: ApiClient, args: argparse.Namespace) -> int:
    """Serve the console until Ctrl-C (or SIGTERM); its pages call the API through `client`, which signs each call
    for a deployed API with the caller's own AWS credentials: the browser never holds them."""
    from gpupilot.console.server import ConsoleServer

    try:
        server = ConsoleServer(client, port=args.port)
    except OSError as error:
        raise UsageError(
            f"cannot listen on 127.0.0.1:{args.port} (--port): {error.strerror or error}", field="--port"
        ) from error
    signed = " (each call signed with your AWS credentials)" if client.sign else ""
    print(f"console on {server.url} for the API at {client.endpoint}{signed}", flush=True)
    print("open it in a browser; Ctrl-C stops it", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.stop()
    return EXIT_OK
