"""The local cloud: embedded moto, the stack deployed into it, the handlers in-process, the API on loopback."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import urllib.request
from pathlib import Path
from typing import Any

from gpupilot.localcloud import adapters
from gpupilot.localcloud.batch_sim import BatchSimulator
from gpupilot.localcloud.deploy import ACCOUNT_ID, Deployment, deploy, load_template
from gpupilot.localcloud.http_api import ApiServer
from gpupilot.localcloud.world import World

MOTO_CONFIG = {
    "batch": {"use_docker": False},
    "lambda": {"use_docker": False},
    "stepfunctions": {"execute_state_machine": True},
}
DEFAULT_PORT = 8765
DEFAULT_SWEEP_SECONDS = 300.0


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class LocalCloud:
    """Start it, use `api_url` (the product) and `aws_url` (the embedded AWS), stop it."""

    def __init__(
        self,
        world: World,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        speedup: float = 1.0,
        sweep_seconds: float = DEFAULT_SWEEP_SECONDS,
        log_file: Path | None = None,
    ) -> None:
        self.world = world
        self.host = host
        self.port = port
        self.speedup = speedup
        self.sweep_seconds = sweep_seconds
        self.log_file = log_file
        self.deployment: Deployment | None = None
        self.dispatcher: adapters.HandlerDispatcher | None = None
        self.simulator: BatchSimulator | None = None
        self._api: ApiServer | None = None
        self._moto: Any = None
        self._aws_port = 0
        self._stopping = threading.Event()

    @property
    def api_url(self) -> str:
        assert self._api is not None
        return f"http://{self.host}:{self._api.port}"

    @property
    def aws_url(self) -> str:
        return f"http://{self.host}:{self._aws_port}"

    def start(self) -> LocalCloud:
        from moto.moto_api import state_manager
        from moto.server import ThreadedMotoServer

        # The embedded AWS is reached by the handlers, not watched by the user: no access log.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._aws_port = free_port(self.host)
        self._set_aws_environment()
        self._moto = ThreadedMotoServer(ip_address=self.host, port=self._aws_port, verbose=False)
        self._moto.start()
        request = urllib.request.Request(
            f"{self.aws_url}/moto-api/config", data=json.dumps(MOTO_CONFIG).encode(), method="POST"
        )
        urllib.request.urlopen(request, timeout=10).close()
        # Batch job statuses change only when the simulator says so.
        state_manager.set_transition("batch::job", {"progression": "manual", "times": 10**9})

        self.dispatcher = adapters.HandlerDispatcher(log_file=self.log_file, metric_sink=self._put_metrics)
        adapters.patch_lambda(self.dispatcher)
        self.simulator = BatchSimulator(self.world, self._deliver_batch_event, ACCOUNT_ID, speedup=self.speedup)
        adapters.patch_batch(self.simulator.submit)
        adapters.apply_offerings(self.world.region, self.world.zones, self._offerings())

        import boto3

        self.deployment = deploy(boto3.session.Session(), load_template(), self.world.zones)
        os.environ.update(self.deployment.environment())
        from functions.shared.clients import reset_clients

        reset_clients()
        self._api = ApiServer(self.host, self.port, self._invoke_api)
        self._api.start()
        if self.sweep_seconds > 0:
            threading.Thread(target=self._sweep_forever, name="gpupilot-sweep", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop whatever was started (also after a failed start)."""
        self._stopping.set()
        if self.simulator:
            self.simulator.stop()
        if self._api:
            self._api.stop()
        if self._moto:
            self._moto.stop()

    # -- wiring ------------------------------------------------------------------------------
    def _set_aws_environment(self) -> None:
        os.environ.update(
            {
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_SESSION_TOKEN": "testing",
                "AWS_DEFAULT_REGION": self.world.region,
                "AWS_REGION": self.world.region,
                "AWS_ENDPOINT_URL": self.aws_url,
                "MOTO_PORT": str(self._aws_port),
                "MOTO_ALLOW_NONEXISTENT_REGION": "true",
            }
        )
        os.environ.pop("AWS_PROFILE", None)

    def _offerings(self) -> dict[str, list[str]]:
        """Every NVIDIA type in every world zone, unless the world says otherwise."""
        from functions.shared.catalog import load_snapshot

        offered = {}
        for instance_type in load_snapshot():
            spec = self.world.instance(instance_type)
            offered[instance_type] = [] if not spec.offered else list(spec.zones or self.world.zones)
        for instance_type, spec in self.world.instance_types.items():
            offered.setdefault(instance_type, [] if not spec.offered else list(spec.zones or self.world.zones))
        return offered

    def _invoke(self, key: str, event: dict[str, Any]) -> dict[str, Any]:
        assert self.dispatcher is not None and self.deployment is not None
        result, errored = self.dispatcher.invoke(
            self.deployment.handlers[key], event, f"gpupilot-{key}", self.deployment.functions[key]
        )
        if errored:
            return {"statusCode": 500, "body": json.dumps({"error": "InternalError", "message": "see the log"})}
        return dict(result)

    def _invoke_api(self, event: dict[str, Any]) -> dict[str, Any]:
        return self._invoke("api", event)

    def _deliver_batch_event(self, event: dict[str, Any]) -> None:
        """EventBridge delivery of a Batch event to job_events (moto does not run rule targets here)."""
        self._invoke("job_events", event)

    def _sweep_forever(self) -> None:
        while not self._stopping.wait(self.sweep_seconds):
            self._invoke("health_sweep", {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}})

    def _put_metrics(self, namespace: str, data: list[dict[str, Any]]) -> None:
        import boto3

        cloudwatch = boto3.client("cloudwatch", endpoint_url=self.aws_url, region_name=self.world.region)
        for start in range(0, len(data), 20):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 20])
