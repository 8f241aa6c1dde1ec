"""The local cloud: embedded moto, the stack deployed into it, the handlers in-process, the API on loopback."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import socket
import threading
import urllib.request
from pathlib import Path
from typing import Any

from gpupilot.localcloud.deploy import ACCOUNT_ID, Deployment, deploy
from gpupilot.localcloud.dispatch import HandlerDispatcher, LocalFunction
from gpupilot.localcloud.fleet import FleetSimulator
from gpupilot.localcloud.http_api import ApiServer
from gpupilot.localcloud.iam import IamEnforcer, enforcer_for
from gpupilot.localcloud.moto_adaptations import ComputeEnvironmentLifecycle, SpotMarket, adapted_moto
from gpupilot.localcloud.template import load_template
from gpupilot.localcloud.world import World

MOTO_CONFIG = {
    "batch": {"use_docker": False},
    "lambda": {"use_docker": False},
    "stepfunctions": {"execute_state_machine": True},
}
DEFAULT_PORT = 8765
DEFAULT_SWEEP_SECONDS = 300.0
# The local timeline: a compute environment is CREATING for this long, and the workflow polls a new pool
# this often (production: Batch takes tens of seconds, GpuJob polls every 10 s).
LOCAL_CE_CREATE_SECONDS = 0.5
LOCAL_QUEUE_POLL_SECONDS = "1"
# An instance not registered 2 s after launch never will be, here; a job with no instance after 3 s gets none.
_FLEET_CLOCK = {"GPUPILOT_REGISTRATION_GRACE_SECONDS": "2", "GPUPILOT_LAUNCH_GRACE_SECONDS": "3"}
# A workflow goes from claiming its pool to SubmitJob within a second here: a pool claimed 2 s ago can retire.
_POOL_CLOCK = {"GPUPILOT_POOL_CLAIM_GRACE_SECONDS": "2"}
TIMELINE_OVERRIDES = {
    "api": {"GPUPILOT_QUEUE_POLL_SECONDS": LOCAL_QUEUE_POLL_SECONDS} | _FLEET_CLOCK,
    "diagnose": _FLEET_CLOCK,
    "health_sweep": _FLEET_CLOCK | _POOL_CLOCK,
    "ensure_queue": _POOL_CLOCK,
}


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
        self.dispatcher = HandlerDispatcher(
            log_file=log_file, metric_sink=self._put_metrics, failure_sink=self._send_to_failure_queue
        )
        self.simulator: FleetSimulator | None = None
        self._api: ApiServer | None = None
        self._moto: Any = None
        self._aws_port = 0
        self._stopping = threading.Event()
        self._adaptations = contextlib.ExitStack()

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

        lifecycle = ComputeEnvironmentLifecycle(
            create_seconds=LOCAL_CE_CREATE_SECONDS, invalid_reason=self.world.compute_environment_invalid
        )
        self.simulator = FleetSimulator(
            self.world,
            self.deliver_event,
            ACCOUNT_ID,
            speedup=self.speedup,
            compute_environment_status=lifecycle.status,
        )
        self._adaptations.enter_context(
            adapted_moto(
                dispatcher=self.dispatcher,
                on_job_submitted=self.simulator.submit,
                lifecycle=lifecycle,
                offerings=(self.world.region, self.world.zones, self._offerings()),
                quotas=self.world.quotas,
                spot_market=SpotMarket(
                    offered=self.world.offered_zones,
                    hourly_usd={t: s.hourly_usd for t, s in self.world.spot.items() if s.hourly_usd is not None},
                    placement_score={
                        t: 1 if s.capacity == "none" else s.placement_score for t, s in self.world.spot.items()
                    },
                ),
            )
        )
        import boto3

        self.deployment = deploy(boto3.session.Session(), load_template(), self.world.zones, self.world.region)
        self.dispatcher.functions = {
            key: dataclasses.replace(function, environment={**function.environment, **TIMELINE_OVERRIDES.get(key, {})})
            for key, function in self.deployment.functions.items()
        }
        from functions.shared.adapters.clients import observe_calls, reset_clients, stop_observing
        from functions.shared.adapters.wiring import reset_ports

        # Each function's calls are authorized against its role in the template, as AWS would.
        enforcer = enforcer_for(
            self.deployment.policies,
            self.deployment.instance_profile_roles,
            self.world.region,
            ACCOUNT_ID,
            IamEnforcer.log_dir_from_environment(),
        )
        observe_calls(enforcer)
        self._adaptations.callback(stop_observing, enforcer)
        reset_clients()
        reset_ports()
        self.simulator.start()
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
        self._adaptations.close()
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
        """Every NVIDIA type in the world's zones that offer it."""
        from functions.shared.adapters.ec2 import load_snapshot

        return {instance_type: self.world.offered_zones(instance_type) for instance_type in load_snapshot()}

    def _invoke_api(self, event: dict[str, Any]) -> dict[str, Any]:
        result, errored = self.dispatcher.invoke("api", event)
        if errored:
            return {"statusCode": 500, "body": json.dumps({"error": "InternalError", "message": "see the log"})}
        return dict(result)

    def deliver_event(self, event: dict[str, Any]) -> None:
        """EventBridge: deliver `event` to the targets of every rule whose pattern matches it, as asynchronous
        invocations. Each job's events come from its own simulator thread, which delivers them in order."""
        from moto.events.models import EventPattern

        assert self.deployment is not None
        for rule in self.deployment.event_rules:
            if rule.pattern is not None and EventPattern.load(json.dumps(rule.pattern)).matches_event(event):  # type: ignore[arg-type]
                for key in rule.targets:
                    self.dispatcher.invoke_as_event(key, event)

    def _sweep_forever(self) -> None:
        """The sweep schedule, fired by the local cloud (moto does not fire schedules)."""
        assert self.deployment is not None
        targets = [key for rule in self.deployment.event_rules if rule.schedule for key in rule.targets]
        while not self._stopping.wait(self.sweep_seconds):
            for key in targets:
                self.dispatcher.invoke_async(
                    key, {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
                )

    def _put_metrics(self, namespace: str, data: list[dict[str, Any]]) -> None:
        import boto3

        cloudwatch = boto3.client("cloudwatch", endpoint_url=self.aws_url, region_name=self.world.region)
        for start in range(0, len(data), 20):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 20])

    def _send_to_failure_queue(self, function: LocalFunction, record: dict[str, Any]) -> None:
        """Lambda's on-failure destination: the invocation record, after the retries, to the function's queue."""
        if function.failure_queue_url is None:
            return
        import boto3

        message = {
            "version": "1.0",
            "requestContext": {
                "functionArn": function.arn,
                "condition": "RetriesExhausted",
                "approximateInvokeCount": 3,
            },
        } | record
        sqs = boto3.client("sqs", endpoint_url=self.aws_url, region_name=self.world.region)
        sqs.send_message(QueueUrl=function.failure_queue_url, MessageBody=json.dumps(message, default=str))
