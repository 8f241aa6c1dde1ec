"""The local cloud: embedded moto, the stack deployed into it, the handlers in-process, the API on loopback.

What it is made of lives beside it: embedded_aws (moto's server), shaping (what the world makes of moto), timeline
(the functions' shortened settings), wiring (the functions deployed, their calls observed), event_routing
(EventBridge's rules), logging_setup (how `gpupilot serve` logs).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from gpupilot.localcloud.clock import LocalClock, handlers_read
from gpupilot.localcloud.deploy import ACCOUNT_ID, Deployment
from gpupilot.localcloud.dispatch import HandlerDispatcher, LocalFunction
from gpupilot.localcloud.embedded_aws import free_port, set_aws_environment, start_moto
from gpupilot.localcloud.event_routing import deliver_event, deliver_event_home
from gpupilot.localcloud.faults import Faults
from gpupilot.localcloud.fleet import FleetSimulator
from gpupilot.localcloud.http_api import ApiServer, LocalRoute
from gpupilot.localcloud.logging_setup import _log_request_error
from gpupilot.localcloud.moto_adaptations import ConsumableBook
from gpupilot.localcloud.reservations import ReservationBook
from gpupilot.localcloud.shaping import compute_environment_lifecycle, moto_shaped_by
from gpupilot.localcloud.sigv4 import Principal, SigV4Verifier
from gpupilot.localcloud.timeline import TIMINGS
from gpupilot.localcloud.wiring import (
    deploy_world,
    functions_on_timeline,
    observe_calls_of,
    put_metrics,
    send_to_failure_queue,
)
from gpupilot.localcloud.world import World

DEFAULT_PORT = 8765
DEFAULT_SWEEP_SECONDS = 300.0


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
        aws_port: int = 0,
        timings: str = "local",
    ) -> None:
        if timings not in TIMINGS:
            raise ValueError(f"timings: one of {', '.join(TIMINGS)}, not {timings!r}")
        self.world = world
        self.host = host
        self.port = port
        self.aws_port = aws_port  # the embedded AWS endpoint's port; 0: any free port
        self.speedup = speedup
        self.sweep_seconds = sweep_seconds
        self.log_file = log_file
        self.timings = timings
        # The one time of the local cloud: the fleet, Batch's lifecycle, the reservations, the workflow, the sweep's
        # schedule and the handlers all read it; POST /local/clock advances it.
        self.clock = LocalClock()
        self.deployment: Deployment | None = None
        self.dispatcher = HandlerDispatcher(
            log_file=log_file, metric_sink=self._put_metrics, failure_sink=self._send_to_failure_queue
        )
        self.simulator: FleetSimulator | None = None
        # One simulated fleet per region of the world (Batch schedules per region); the home one is `simulator`.
        self.simulators: dict[str, FleetSimulator] = {}
        self.reservations: ReservationBook | None = None
        self.faults: Faults | None = None
        self._api: ApiServer | None = None
        self._moto: Any = None
        self._aws_port = 0
        self._stopping = threading.Event()
        self._adaptations = contextlib.ExitStack()
        self._hosts_folder: str | None = None

    @property
    def api_url(self) -> str:
        assert self._api is not None
        return f"http://{self.host}:{self._api.port}"

    @property
    def aws_url(self) -> str:
        return f"http://{self.host}:{self._aws_port}"

    def start(self) -> LocalCloud:
        self._aws_port = free_port(self.host, self.aws_port)
        set_aws_environment(self.world.region, self.aws_url, self._aws_port)
        self._moto = start_moto(self.host, self._aws_port)
        lifecycle = compute_environment_lifecycle(self.world, self.clock)
        faults = Faults(self.world.faults)
        self.faults = faults
        self.dispatcher.fails = faults.lambda_error
        # One book of the account's reservations, each in its region: every region's fleet launches into it.
        self.reservations = ReservationBook(self.world, clock=self.clock.time)
        # Batch's consumable resources (the teams' GPU caps), each in its region, held by the jobs each fleet runs.
        consumables = ConsumableBook()
        for region in self.world.all_regions:
            self.simulators[region] = FleetSimulator(
                self.world.in_region(region),
                faults.events(self.deliver_event),
                ACCOUNT_ID,
                speedup=self.speedup,
                compute_environment_status=lifecycle.status,
                reservations=self.reservations,
                clock=self.clock,
                consumables=consumables,
                agents_root=self._agents_root(region),
            )
        self.simulator = self.simulators[self.world.region]
        self._adaptations.enter_context(
            moto_shaped_by(
                self.world,
                dispatcher=self.dispatcher,
                on_job_submitted=self._submit_to_fleet,
                lifecycle=lifecycle,
                speedup=self.speedup,
                clock=self.clock,
                reservations=self.reservations,
                console_of=self._console,
                consumables=consumables,
            )
        )
        self.deployment = deploy_world(self.world)
        self.dispatcher.functions = functions_on_timeline(self.deployment, self.speedup, self.timings)
        from functions.shared.adapters.clients import reset_clients
        from functions.shared.adapters.wiring import reset_ports

        observe_calls_of(self.deployment, faults, self.world.region, self._adaptations)
        self._adaptations.enter_context(handlers_read(self.clock))
        reset_clients()
        reset_ports()
        from functions.shared.adapters.regions import forget_networks

        forget_networks()
        for simulator in self.simulators.values():
            simulator.start()
        self._api = ApiServer(
            self.host,
            self.port,
            self._invoke_api,
            {"/local/clock": LocalRoute(("GET", "POST"), self._clock_route)},
            self._verifier(),
        )
        self._api._server.handle_error = _log_request_error
        self._api.start()
        if self.sweep_seconds > 0:
            threading.Thread(target=self._sweep_forever, name="gpupilot-sweep", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop whatever was started (also after a failed start)."""
        self._stopping.set()
        for simulator in self.simulators.values():
            simulator.stop()
        # The embedded AWS's server notices a shutdown within half a second: it stops while the API server does.
        moto_stopped = threading.Thread(target=self._moto.stop, daemon=True) if self._moto else None
        if moto_stopped:
            moto_stopped.start()
        if self._api:
            self._api.stop()
        self._adaptations.close()
        if moto_stopped:
            moto_stopped.join()

    # -- wiring ------------------------------------------------------------------------------
    def _verifier(self) -> SigV4Verifier | None:
        """With the world's identities, the API verifies SigV4 as API Gateway's IAM authorization does."""
        if not self.world.identities:
            return None
        principals = [
            Principal(name, identity.arn, identity.access_key_id, identity.secret_access_key)
            for name, identity in self.world.identities.items()
        ]
        return SigV4Verifier(principals, self.world.region)

    def _agents_root(self, region: str) -> str:
        """Where a region's simulated hosts keep their jobs' checkpoint directories (removed when the cloud stops)."""
        if self._hosts_folder is None:
            self._hosts_folder = tempfile.mkdtemp(prefix="gpupilot-hosts-")
            self._adaptations.callback(shutil.rmtree, self._hosts_folder, True)
        return os.path.join(self._hosts_folder, region)

    def _console(self, instance_id: str) -> str | None:
        """An instance's console, from the fleet of whichever region launched it (None: none of them did)."""
        for simulator in self.simulators.values():
            text = simulator.console(instance_id)
            if text is not None:
                return text
        return None

    def _submit_to_fleet(self, job: Any) -> None:
        """A job Batch accepted goes to the fleet of its region (its ARN names it)."""
        region = str(job.arn).split(":")[3]
        self.simulators.get(region, self.simulators[self.world.region]).submit(job)

    def _invoke_api(self, event: dict[str, Any]) -> dict[str, Any]:
        result, errored = self.dispatcher.invoke("api", event)
        if errored:
            failed = {"error": "InternalError", "field": None, "message": "see the log"}
            return {"statusCode": 500, "body": json.dumps(failed)}
        return dict(result)

    def deliver_event(self, event: dict[str, Any]) -> None:
        """EventBridge: `event` to the matching rules' targets of its region's bus (see event_routing). Each job's
        events come from its own simulator thread, which delivers them in order."""
        assert self.deployment is not None
        deliver_event(self.deployment, self.dispatcher, self.world.region, event)

    def deliver_event_home(self, event: dict[str, Any]) -> None:
        """An event that arrived on the home region's bus from another region's."""
        assert self.deployment is not None
        deliver_event_home(self.deployment, self.dispatcher, event)

    def _sweep_forever(self) -> None:
        """The sweep schedule, fired by the local cloud (moto does not fire schedules)."""
        assert self.deployment is not None
        targets = [key for rule in self.deployment.event_rules if rule.schedule for key in rule.targets]
        while not self.clock.sleep(self.sweep_seconds, self._stopping):
            for key in targets:
                self.dispatcher.invoke_async(
                    key, {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
                )

    def _clock_route(self, method: str, body: bytes | None) -> tuple[int, dict[str, Any]]:
        """`/local/clock`: GET reads the local cloud's time; POST `{"advance_seconds": N}` moves it N seconds ahead
        (N >= 0), with everything that waits on it. Both answer `{now, advanced_seconds}`."""
        if method == "POST":
            try:
                seconds = json.loads(body or b"{}")["advance_seconds"]
                if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                    raise TypeError(seconds)
                self.clock.advance(float(seconds))
            except (ValueError, TypeError, KeyError, json.JSONDecodeError):
                return 400, {
                    "error": "BadRequest",
                    "field": "advance_seconds",
                    "message": 'the body is {"advance_seconds": N}, N a finite number of seconds, 0 or more',
                }
        now = self.clock.now().isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return 200, {"now": now, "advanced_seconds": self.clock.advanced_seconds}

    def _put_metrics(self, namespace: str, data: list[dict[str, Any]]) -> None:
        put_metrics(self.aws_url, self.world.region, namespace, data)

    def _send_to_failure_queue(self, function: LocalFunction, record: dict[str, Any]) -> None:
        send_to_failure_queue(self.aws_url, self.world.region, function, record)
