"""The local cloud: embedded moto, the stack deployed into it, the handlers in-process, the API on loopback."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpupilot.localcloud.clock import LocalClock, handlers_read
from gpupilot.localcloud.deploy import ACCOUNT_ID, Deployment, deploy, deploy_region
from gpupilot.localcloud.dispatch import HandlerDispatcher, LocalFunction
from gpupilot.localcloud.faults import Faults
from gpupilot.localcloud.fleet import FleetSimulator
from gpupilot.localcloud.http_api import ApiServer, LocalRoute
from gpupilot.localcloud.iam import IamEnforcer, enforcer_for
from gpupilot.localcloud.moto_adaptations import (
    ComputeEnvironmentLifecycle,
    ConsumableBook,
    RegionWorldView,
    SpotMarket,
    WorkflowClock,
    adapted_moto,
)
from gpupilot.localcloud.reservations import ReservationBook
from gpupilot.localcloud.sigv4 import Principal, SigV4Verifier
from gpupilot.localcloud.template import load_region_templates
from gpupilot.localcloud.world import World

MOTO_CONFIG = {
    "batch": {"use_docker": False},
    "lambda": {"use_docker": False},
    "stepfunctions": {"execute_state_machine": True},
}
DEFAULT_PORT = 8765
DEFAULT_SWEEP_SECONDS = 300.0
# The local timeline: a compute environment is CREATING for this long, and the workflow polls a new pool
# this often (production: Batch takes tens of seconds, GpuJob polls every 10 s), giving up on it after a minute
# (production: half an hour). Both are real seconds, whatever the speedup (timeline_overrides), so a new pool
# always takes the workflow one WaitForJobQueue round. A deleted queue or compute environment is DELETING for a
# second, then shown DELETED for half a minute, its name taken meanwhile (production: minutes, and longer).
LOCAL_CE_CREATE_SECONDS = 0.5
LOCAL_QUEUE_POLL_SECONDS = "1"
LOCAL_PROVISION_TIMEOUT_SECONDS = "60"
LOCAL_DELETE_SECONDS = 1.0
LOCAL_DELETED_SECONDS = 30.0
# An instance not registered 2 s after launch never will be, here; a job with no instance after 3 s gets none.
_FLEET_CLOCK = {"GPUPILOT_REGISTRATION_GRACE_SECONDS": "2", "GPUPILOT_LAUNCH_GRACE_SECONDS": "3"}
# A workflow goes from claiming its pool to SubmitJob within a second here: a pool claimed 2 s ago can retire.
_POOL_CLOCK = {"GPUPILOT_POOL_CLAIM_GRACE_SECONDS": "2"}
# What the functions are told, by `timings`: "local" (the default) shortens the deployment's settings to the local
# timeline's seconds above; "deployed" leaves each function the values the synthesized template gives it (the ones a
# deployment runs with: 10 minutes' registration and launch grace, a 10 s pool poll, a 30-minute provisioning
# deadline), which pass as the deployment's do unless the local cloud's clock is advanced (POST /local/clock).
TIMINGS = ("local", "deployed")
TIMELINE_OVERRIDES = {
    "api": {
        "GPUPILOT_QUEUE_POLL_SECONDS": LOCAL_QUEUE_POLL_SECONDS,
        "GPUPILOT_PROVISION_TIMEOUT_SECONDS": LOCAL_PROVISION_TIMEOUT_SECONDS,
    }
    | _FLEET_CLOCK,
    "diagnose": _FLEET_CLOCK,
    "health_sweep": _FLEET_CLOCK | _POOL_CLOCK,
    "ensure_queue": _POOL_CLOCK,
}


def timeline_overrides(key: str, speedup: float = 1.0, timings: str = "local") -> dict[str, str]:
    """The local timeline's settings for function `key` at `speedup` (none with the deployed `timings`). The
    workflow's Wait states pass in simulated time, `speedup` times faster: the pool poll it is told is stretched by
    as much, so that it stays a second of the clock against a compute environment's half second of creation."""
    if timings == "deployed":
        return {}
    overrides = dict(TIMELINE_OVERRIDES.get(key, {}))
    if "GPUPILOT_QUEUE_POLL_SECONDS" in overrides:
        overrides["GPUPILOT_QUEUE_POLL_SECONDS"] = str(max(1, round(float(LOCAL_QUEUE_POLL_SECONDS) * speedup)))
    return overrides


@contextlib.contextmanager
def shared_botocore_data() -> Iterator[None]:
    """botocore's data files parsed once per process, not once per session.

    Every botocore session parses the files it needs again, and the local cloud makes many: the embedded
    AWS's services, the fleet simulator, the handlers' clients after each reset. EC2's model alone (4 MB)
    was parsed seven times while a local cloud started: a second of its four. botocore treats what it loads
    as read-only (one session already hands the same objects to all its clients), so every session can share
    one parse of each file."""
    from botocore.loaders import JSONFileLoader

    original = JSONFileLoader.load_file
    parsed: dict[str, Any] = {}
    lock = threading.Lock()

    def load_file(loader: JSONFileLoader, file_path: str) -> Any:
        with lock:
            if file_path not in parsed:
                parsed[file_path] = original(loader, file_path)
            return parsed[file_path]

    JSONFileLoader.load_file = load_file  # type: ignore[method-assign]
    try:
        yield
    finally:
        JSONFileLoader.load_file = original  # type: ignore[method-assign]


def free_port(host: str, port: int = 0) -> int:
    """`port` when it is free on `host` (else OSError), or any free port for 0."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
        return int(probe.getsockname()[1])


# -- the console shows the product ---------------------------------------------------------------------------
LOCAL_LOGGER = "gpupilot.local"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries whose chatter is detail: request lines, the embedded AWS's own errors, HTTP retries.
CHATTY_LOGGERS = ("werkzeug", "moto", "botocore", "boto3", "urllib3", "docker")


class _OneLine(logging.Formatter):
    """A record as one line, its exception reduced to its type and message (the log file has the traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"gpupilot serve: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            line += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        return " ".join(line.splitlines())


def _not_a_disconnect(record: logging.LogRecord) -> bool:
    """A client that goes away mid-answer (Ctrl-C, a time-out) is not the server's problem."""
    return not (record.exc_info and isinstance(record.exc_info[1], ConnectionError))


def configure_logging(log_file: Path | None, verbose: bool = False) -> None:
    """Logging for `gpupilot serve`: every server log to `log_file` (the functions' logs go there too, by the
    dispatcher); on stderr only the local API's errors, one line each (not clients that hung up), or, `verbose`,
    everything with its traceback: request lines, the embedded AWS, dropped connections."""

    def to_file() -> logging.Handler | None:
        if log_file is None:
            return None
        handler = logging.FileHandler(log_file, delay=True)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        return handler

    def to_console() -> logging.Handler:
        handler = logging.StreamHandler(sys.stderr)
        if verbose:
            handler.setFormatter(logging.Formatter(LOG_FORMAT))
        else:
            handler.setLevel(logging.WARNING)
            handler.setFormatter(_OneLine())
            handler.addFilter(_not_a_disconnect)
        return handler

    # Handlers of their own for the local logger: Powertools' Logger filters every "gpupilot..." record out of
    # the root logger's handlers (its duplicate suppression), which would silence the local API's errors.
    root = logging.getLogger()
    root.handlers = [h for h in (to_file(), to_console() if verbose else None) if h is not None]
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
    # The embedded AWS answers the handlers, not the user: its errors go to the log file (the console with
    # --verbose, which also shows its request lines).
    logging.getLogger("werkzeug").setLevel(logging.INFO if verbose else logging.ERROR)
    local = logging.getLogger(LOCAL_LOGGER)
    local.handlers = [h for h in (to_file(), to_console()) if h is not None]
    local.setLevel(logging.DEBUG if verbose else logging.INFO)
    local.propagate = False  # not to the functions' structured logger ("gpupilot"), which prints on stdout
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_error


def _log_thread_error(failure: threading.ExceptHookArgs) -> None:
    """A background thread's uncaught error: logged (one line on the console) instead of a printed traceback."""
    if failure.exc_type is SystemExit:
        return
    exc_info = (failure.exc_type, failure.exc_value or failure.exc_type(), failure.exc_traceback)
    name = failure.thread.name if failure.thread else "?"
    logging.getLogger(LOCAL_LOGGER).error("thread %s failed", name, exc_info=exc_info)


def _log_request_error(request: Any, client_address: Any) -> None:
    """socketserver's handle_error, logged (as one line on the console) instead of a traceback printed there."""
    error = sys.exc_info()[1]
    client = ":".join(map(str, client_address[:2])) if isinstance(client_address, tuple) else str(client_address)
    logger = logging.getLogger(LOCAL_LOGGER)
    if isinstance(error, ConnectionError):
        logger.debug("client %s went away before its answer: %s", client, error)
    else:
        logger.error("request from %s failed", client, exc_info=True)


def _spot_market(world: World) -> SpotMarket:
    """The spot market of the world's region, from its `spot` section."""
    return SpotMarket(
        offered=world.offered_zones,
        region=world.region,
        hourly_usd={t: s.hourly_usd for t, s in world.spot.items() if s.hourly_usd is not None},
        placement_score={t: 1 if s.capacity == "none" else s.placement_score for t, s in world.spot.items()},
    )


def _matches(pattern: dict[str, Any] | None, event: dict[str, Any]) -> bool:
    from moto.events.models import EventPattern

    return pattern is not None and EventPattern.load(json.dumps(pattern)).matches_event(event)  # type: ignore[arg-type]


def forwarded(event: dict[str, Any]) -> dict[str, Any]:
    """An event as EventBridge delivers it on another region's bus: the source's `region`, `account` and `resources`
    kept, a new `id` (moto's own forwarding rewrites all three to the destination's; LocalStack's tests, validated
    against AWS, found the source's region and account kept and a new id across regions: AWS's documentation does
    not say, so GPU Pilot reads an attempt's region from its record, never from the event's envelope)."""
    import uuid

    return {**event, "id": str(uuid.uuid4())}


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
        self._adaptations.enter_context(shared_botocore_data())
        from moto.moto_api import state_manager
        from moto.server import ThreadedMotoServer

        # The embedded AWS is reached by the handlers, not watched by the user: no access log (unless
        # configure_logging asked for one).
        if logging.getLogger("werkzeug").level == logging.NOTSET:
            logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._aws_port = free_port(self.host, self.aws_port)
        self._set_aws_environment()
        self._moto = ThreadedMotoServer(ip_address=self.host, port=self._aws_port, verbose=False)
        self._moto.start()
        request = urllib.request.Request(
            f"{self.aws_url}/moto-api/config", data=json.dumps(MOTO_CONFIG).encode(), method="POST"
        )
        urllib.request.urlopen(request, timeout=10).close()
        # Batch job statuses change only when the simulator says so.
        state_manager.set_transition("batch::job", {"progression": "manual", "times": 10**9})

        others = {region: self.world.in_region(region) for region in self.world.regions}
        lifecycle = ComputeEnvironmentLifecycle(
            create_seconds=LOCAL_CE_CREATE_SECONDS,
            invalid_reason=self.world.compute_environment_invalid,
            invalid_reason_in={region: world.compute_environment_invalid for region, world in others.items()},
            creating_seconds=self.world.compute_environment_creating,
            creating_seconds_in={region: world.compute_environment_creating for region, world in others.items()},
            delete_seconds=LOCAL_DELETE_SECONDS,
            deleted_seconds=LOCAL_DELETED_SECONDS,
            clock=self.clock.monotonic,
        )
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
            adapted_moto(
                dispatcher=self.dispatcher,
                on_job_submitted=self._submit_to_fleet,
                lifecycle=lifecycle,
                offerings=(self.world.region, self.world.zones, self._offerings(self.world)),
                quotas=self.world.quotas,
                spot_market=_spot_market(self.world),
                # The workflow's Wait states and timeouts pass in simulated time, as the jobs do.
                workflow_clock=WorkflowClock(self.speedup, clock=self.clock),
                regions={
                    region: RegionWorldView(world.zones, self._offerings(world), world.quotas, _spot_market(world))
                    for region, world in others.items()
                },
                reservations=self.reservations,
                console_of=self._console,
                unsold={region: self.world.in_region(region).unsold() for region in self.world.all_regions},
                consumables=consumables,
            )
        )
        import boto3

        # The home stack and each capacity region's stack, synthesized for the world's regions.
        home_template, region_templates = load_region_templates(
            self.world.region, list(self.world.regions), self.world.deployment_context()
        )
        session = boto3.session.Session()
        self.deployment = deploy(session, home_template, self.world.zones, self.world.region)
        self.deployment.regions = {
            region: deploy_region(session, template, self.world.regions[region].zones, region)
            for region, template in region_templates.items()
        }
        self.dispatcher.functions = {
            key: dataclasses.replace(
                function, environment={**function.environment, **timeline_overrides(key, self.speedup, self.timings)}
            )
            for key, function in self.deployment.functions.items()
        }
        from functions.shared.adapters.clients import observe_calls, reset_clients, stop_observing
        from functions.shared.adapters.wiring import reset_ports

        # Each function's calls are authorized against its role in the template, as AWS would.
        profile_roles = dict(self.deployment.instance_profile_roles)
        for regional in self.deployment.regions.values():
            profile_roles |= regional.instance_profile_roles
        enforcer = enforcer_for(
            self.deployment.policies,
            profile_roles,
            self.world.region,
            ACCOUNT_ID,
            IamEnforcer.log_dir_from_environment(),
        )
        observe_calls(enforcer)
        self._adaptations.callback(stop_observing, enforcer)
        # The world's faults: a handler's AWS call may be refused or throttled (answered before it is sent).
        for fault in (faults.refuse, faults.throttle):
            observe_calls(fault, event="before-send")
            self._adaptations.callback(stop_observing, fault)
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

    @staticmethod
    def _offerings(world: World) -> dict[str, list[str]]:
        """Every NVIDIA type in the zones of the world's region that offer it."""
        from functions.shared.adapters.ec2 import load_snapshot

        return {instance_type: world.offered_zones(instance_type) for instance_type in load_snapshot()}

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
        """EventBridge: deliver `event` to the targets of every rule of its region's default bus whose pattern
        matches it, as asynchronous invocations. Each job's events come from its own simulator thread, which
        delivers them in order. A capacity region's rules forward what they match to the home region's bus (its
        stack's cross-region bus target), where the home rules match it again: the event keeps its source region,
        account and resources, and gets a new id (see `forwarded`)."""
        assert self.deployment is not None
        regional = self.deployment.regions.get(str(event.get("region")))
        if regional is None:
            for rule in self.deployment.event_rules:
                if _matches(rule.pattern, event):
                    for key in rule.targets:
                        self.dispatcher.invoke_as_event(key, event)
            return
        home_bus = f":events:{self.world.region}:{ACCOUNT_ID}:event-bus/default"
        for rule in regional.event_rules:
            if _matches(rule.pattern, event) and any(bus.endswith(home_bus) for bus in rule.forward_to):
                self.deliver_event_home(forwarded(event))

    def deliver_event_home(self, event: dict[str, Any]) -> None:
        """An event that arrived on the home region's bus from another region's."""
        assert self.deployment is not None
        for rule in self.deployment.event_rules:
            if _matches(rule.pattern, event):
                for key in rule.targets:
                    self.dispatcher.invoke_as_event(key, event)

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
