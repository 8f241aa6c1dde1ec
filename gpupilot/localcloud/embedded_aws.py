"""The embedded AWS the local cloud runs: moto's server, configured as the product needs it, and the process's AWS
environment pointed at it (botocore's data parsed once per process: botocore_data)."""

from __future__ import annotations

import json
import logging
import os
import socket
import urllib.request
from typing import Any

from gpupilot.localcloud import botocore_data

MOTO_CONFIG = {
    "batch": {"use_docker": False},
    "lambda": {"use_docker": False},
    "stepfunctions": {"execute_state_machine": True},
}


def free_port(host: str, port: int = 0) -> int:
    """`port` when it is free on `host` (else OSError), or any free port for 0."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
        return int(probe.getsockname()[1])


def start_moto(host: str, port: int) -> Any:
    """moto's server on `host:port`, configured as MOTO_CONFIG says, Batch's job statuses left to the simulator; from
    then on the process's botocore sessions share their parsed data files (botocore_data)."""
    from moto.moto_api import state_manager
    from moto.server import ThreadedMotoServer

    # The embedded AWS is reached by the handlers, not watched by the user: no access log (unless
    # configure_logging asked for one).
    if logging.getLogger("werkzeug").level == logging.NOTSET:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
    botocore_data.share()
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    request = urllib.request.Request(
        f"http://{host}:{port}/moto-api/config", data=json.dumps(MOTO_CONFIG).encode(), method="POST"
    )
    urllib.request.urlopen(request, timeout=10).close()
    # Batch job statuses change only when the simulator says so.
    state_manager.set_transition("batch::job", {"progression": "manual", "times": 10**9})
    return server


def set_aws_environment(region: str, url: str, port: int) -> None:
    """The process's AWS settings: fake credentials, `region`, every endpoint the embedded AWS at `url`."""
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": region,
            "AWS_REGION": region,
            "AWS_ENDPOINT_URL": url,
            "MOTO_PORT": str(port),
            "MOTO_ALLOW_NONEXISTENT_REGION": "true",
        }
    )
    os.environ.pop("AWS_PROFILE", None)
