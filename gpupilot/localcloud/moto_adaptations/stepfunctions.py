"""Step Functions: the workflow's simulated time, and executions faster with every answer unchanged.

16. Simulated time in the workflow: moto's Step Functions engine really sleeps a Wait state's seconds and
   really waits out a task's TimeoutSeconds and HeartbeatSeconds. Here they pass on the local cloud's clock
   (gpupilot/localcloud/clock.py), which a test or an operator can advance: a Wait state's `Seconds`/
   `SecondsPath`, a `Timestamp`/`TimestampPath` wait (until the clock reaches that moment), and a task's
   `TimeoutSeconds`/`TimeoutSecondsPath`/`HeartbeatSeconds`/`HeartbeatSecondsPath`. The local cloud runs
   simulated time `speedup` times faster (`--speedup`): a relative wait, a timeout and a heartbeat pass `speedup`
   times faster too, so a workflow that polled on a timer would poll as often per simulated hour as on AWS. A
   timeout is never scaled below a few seconds of the clock (or its own length, if shorter): the local fleet's
   steps and the handlers' work take time that speedup does not shorten. A Retry's backoff keeps real time.

13. Speed, answers unchanged (sampled under load by `make bench`'s local_e2e):

Step Functions executions. moto parses the state machine's ASL with ANTLR at every execution start.
   Here a definition is parsed once and its program shared by the executions of that definition: the
   evaluation state lives in each execution's environment, and every component's heap key (which indexes
   that environment) is fixed before the program is shared, so that concurrent executions never race to
   create one.

Step Functions task clients. moto creates a new boto3 client for every task it runs (a Lambda invoke,
   a service integration), with fixed test credentials and configuration. Here one client per region,
   service and endpoint serves every task: boto3 clients are thread-safe.

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
tests/integration/test_moto_speed.py checks that each speed-up answers exactly what moto answers without it.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from gpupilot.localcloud.clock import LocalClock
from gpupilot.localcloud.moto_adaptations.patches import Patches


def _fix_heap_keys(component: Any) -> None:
    """Create the heap key of every evaluation component reachable from `component`, once."""
    from moto.stepfunctions.parser.asl.component.component import Component
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    seen: set[int] = set()
    stack = [component]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, EvalComponent):
            item.heap_key  # noqa: B018 - the property creates the key on first read
        if isinstance(item, Component):
            stack.extend(vars(item).values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())


def parse_each_definition_once(patches: Patches) -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    programs: dict[str, Any] = {}
    lock = threading.Lock()

    def entrypoint(self: Any) -> Any:
        definition = self._evaluation_details.state_machine_details.definition
        with lock:
            program = programs.get(definition)
            if program is None:
                program = AmazonStateLanguageParser.parse(definition)[0]
                _fix_heap_keys(program)
                programs[definition] = program
        return program

    patches.replace(ExecutionWorker, "_get_evaluation_entrypoint", entrypoint)


# The modules of moto's Step Functions interpreter that create a client per task (`from ... import boto_client_for`).
_TASK_CLIENT_MODULES = tuple(
    f"moto.stepfunctions.parser.asl.component.state.exec.state_task.{name}"
    for name in (
        "lambda_eval_utils", "service.state_task_service_aws_sdk", "service.state_task_service_batch",
        "service.state_task_service_dynamodb", "service.state_task_service_ecs", "service.state_task_service_events",
        "service.state_task_service_glue", "service.state_task_service_sfn", "service.state_task_service_sns",
        "service.state_task_service_sqs", "service.state_task_service_unsupported",
    )
)  # fmt: skip


def share_task_clients(patches: Patches) -> None:
    from moto.core.models import botocore_stubber
    from moto.settings import moto_server_port
    from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for as make

    clients: dict[tuple[str, str, bool, int], Any] = {}
    lock = threading.Lock()

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        # What moto's own function builds a client from; it ignores the state's credentials.
        key = (region, service, bool(botocore_stubber.enabled), int(moto_server_port()))
        with lock:
            client = clients.get(key)
            if client is None:
                client = clients[key] = make(region, service, state_credentials)
        return client

    for name in _TASK_CLIENT_MODULES:
        module = importlib.import_module(name)
        if hasattr(module, "boto_client_for"):
            patches.replace(module, "boto_client_for", boto_client_for)


# The local fleet's steps (an instance's boot, a job's start) and the handlers' own work take real seconds
# that speedup does not shorten: a timeout scaled below this would expire for want of them, not of time.
TIMEOUT_FLOOR_SECONDS = 10.0


@dataclass(frozen=True)
class WorkflowClock:
    """16. The workflow's own time: on the local cloud's `clock`, `speedup` times faster."""

    speedup: float = 1.0
    timeout_floor_seconds: float = TIMEOUT_FLOOR_SECONDS
    clock: LocalClock = field(default_factory=LocalClock)

    def wait_seconds(self, seconds: float) -> float:
        """The seconds of the clock a Wait state of `seconds` lasts."""
        return seconds / self.speedup

    def timeout_seconds(self, seconds: float) -> float:
        """The seconds of the clock a task's timeout (or heartbeat) of `seconds` lasts: scaled, but not below the
        floor."""
        return max(seconds / self.speedup, min(seconds, self.timeout_floor_seconds))

    def seconds_until(self, moment: datetime) -> float:
        """The seconds of the clock until `moment` (naive: UTC, as a state machine's timestamps are)."""
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp() - self.clock.time()


def _wait_until(env: Any, seconds: float, clock: LocalClock) -> None:
    """Wait `seconds` of the clock (a float: moto's own wait rounds to whole seconds) unless the execution ends
    first."""
    deadline = clock.monotonic() + seconds
    while env.is_running():
        left = deadline - clock.monotonic()
        if left <= 0:
            return
        clock.wait(env.program_state_event, left)


def workflow_time(patches: Patches, clock: WorkflowClock) -> None:
    """16. Wait states, tasks' timeouts and heartbeats pass on the local cloud's clock, relative ones at its speed."""
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException
    from moto.stepfunctions.parser.asl.component.common.timeouts.heartbeat import Heartbeat
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import Timeout
    from moto.stepfunctions.parser.asl.component.state.exec import execute_state
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.seconds import Seconds, SecondsJSONata
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.seconds_path import SecondsPath
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
    from moto.stepfunctions.parser.asl.eval.callback import callback

    relative = (Seconds, SecondsJSONata, SecondsPath)

    def until_moment(wait: Any, env: Any) -> float:
        """A Timestamp wait's seconds until its moment, on the clock (moto's own reads the machine's local time)."""
        wait.string.eval(env=env)
        text = env.stack.pop()
        moment = wait._from_timestamp_string(timestamp=text)
        if moment is None:
            raise FailureEventException(wait._create_failure_event(env, text))
        return clock.seconds_until(moment)

    def wait_body(self: Any, env: Any) -> None:
        if isinstance(self, Timestamp):
            seconds = until_moment(self, env)
        else:
            seconds = self._get_wait_seconds(env=env)
            seconds = clock.wait_seconds(seconds) if isinstance(self, relative) else seconds
        _wait_until(env, seconds, clock.clock)

    def timeout_body(self: Any, env: Any) -> None:
        seconds = clock.timeout_seconds(self._eval_seconds(env=env))
        # Whole seconds stay an integer, as the execution history reports a timeout (TaskScheduled's timeoutInSeconds).
        env.stack.append(int(seconds) if float(seconds).is_integer() else seconds)

    patches.replace(WaitFunction, "_eval_body", wait_body)
    patches.replace(Timeout, "_eval_body", timeout_body)
    patches.replace(Heartbeat, "_eval_body", timeout_body)
    # Where moto waits out a timeout: a state's run against its TimeoutSeconds (the only `threading.Event` its module
    # makes), a callback's task token against it, a heartbeat against HeartbeatSeconds. Their events wait on the clock.
    clocked = clock.clock.event_class()
    patches.replace(execute_state, "threading", SimpleNamespace(Event=clocked))
    patches.replace(callback, "Event", clocked)
