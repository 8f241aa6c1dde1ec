"""Every adaptation of moto the local cloud needs, in one module, applied and undone by `adapted_moto`.

moto is more forgiving than AWS and simpler than a GPU fleet; where GPU Pilot depends on AWS's behaviour,
the local cloud makes moto behave like AWS:

1. Lambda: moto's docker-less Lambda echoes its input; an invoke runs the function's real handler
   in-process (dispatch.py), and an `Event` invoke runs it in the background, as Lambda does. An
   UpdateFunctionConfiguration that sets the environment takes effect on the next invoke, as in Lambda
   (an operator changing a setting, as a redeploy would).
2. Batch jobs: moto's docker-less Batch marks a job SUCCEEDED inside SubmitJob; the job is handed to the
   Batch simulator instead, which moves it through its states as the world says. moto names the job's log
   stream at submit and never creates it; AWS names each attempt's stream when it reaches RUNNING
   (DescribeJobs: "Each container attempt receives a log stream name when they reach the RUNNING status"), and
   the awslogs driver writes the container's output there. Here the stream is named at RUNNING, as the job
   definition's awslogs options say, and since no container runs, the simulator writes what it did to it
   (image, command, host, runtime, exit code), each line marked as simulated.
3. Batch compute environments: moto reports every compute environment VALID at once and requires a
   serviceRole. Here one is CREATING for `create_seconds` after CreateComputeEnvironment, then VALID,
   or INVALID with the world's statusReason; without a serviceRole Batch's service-linked role is used.
4. Batch job queues: AWS refuses CreateJobQueue while a compute environment it orders is not VALID;
   moto accepts it. Here it is refused as AWS refuses it.
5. EC2 offerings: the instance type offerings per zone come from the world, not moto's static data.
6. Service Quotas: moto knows only VPC quotas; EC2's GPU vCPU quotas are served from the world.
7. Batch ListJobs: moto returns every job in one answer and ignores maxResults; AWS pages (nextToken),
   so the sweep's paging, and its call count, are exercised here as AWS would make them.
8. Batch SubmitJob: moto takes a job into a DISABLED queue; AWS does not ("new jobs can't be added to the
   queue, but jobs already in the queue can finish": UpdateJobQueue, state). Here it is refused.
9. Batch job queues' jobStateTimeLimitActions: moto drops them; here CreateJobQueue keeps them and
   DescribeJobQueues shows them, so the backstop GPU Pilot sets is visible as on AWS (nothing acts on
   them: their shortest limit, 10 minutes, is longer than any local run).

10. EC2's spot market: moto prices every spot offering at $0.00001 from its own offerings, and has no
   GetSpotPlacementScores; here spot prices and placement scores come from the world (`spot.<type>`):
   `hourly_usd` (default: 40% of the type's on-demand snapshot price in the world's region),
   `placement_score` (default 9; 1 where the world's spot `capacity` is `none`), for the zones that offer
   the type. Asked about fewer than three instance types, AWS scores low whatever the capacity ("If you
   specify one or two instance types [...] the returned placement score will always be low":
   GetSpotPlacementScores, InstanceType.N); so does the local cloud (3 at most).

11. The AWS Price List API: not in moto at all; here GetProducts answers, in the Price List's own shape,
   the on-demand Linux prices of the bundled snapshot of each region (functions/shared/data/prices/; a
   region without one has no products), both to the embedded server (the local cloud) and to in-process
   mocks (tests). Every TERM_MATCH filter is honoured, on the products' attributes, as the API does. As in
   the Price List, a type sold in Capacity Blocks also has a Capacity Block product (`marketoption`
   `CapacityBlock`, operation `RunInstances:CB`) with the same type, region, OS, tenancy and capacity
   status; its hourly rate is not the on-demand price (here: half of it), so a reader that does not ask for
   `marketoption` `OnDemand` prices the type wrong.

12. Batch deletions and limits: moto deletes a job queue or a compute environment in any state, at once, and
   creates any number of them. AWS deletes a queue only once it is DISABLED ("You must first disable
   submissions for a queue with the UpdateJobQueue operation": DeleteJobQueue), a compute environment only
   once it is DISABLED and no queue orders it (DeleteComputeEnvironment), and allows 50 compute environments
   and 50 job queues per region, a limit that cannot be raised (AWS Batch User Guide, service quotas). Here
   each is refused as AWS refuses it. And a deletion takes time in AWS: what was deleted is described DELETING
   (a queue being deleted still orders its compute environment), then DELETED for a while, then no more
   (DescribeComputeEnvironments and DescribeJobQueues: status CREATING | UPDATING | DELETING | DELETED | VALID |
   INVALID); its name stays taken until then (a create under it is refused, "Object already exists"). Here
   `delete_seconds` and `deleted_seconds` of the lifecycle say how long each lasts (0: at once, as moto).

13. Speed, answers unchanged (moto_speed.py): DynamoDB item answers are JSON-encoded directly instead of
   through moto's shape-walking serializer, a state machine's ASL is parsed once, not per execution, and
   Step Functions tasks share one client per service instead of creating one each; a DynamoDB transaction saves
   (and, cancelled, restores) only the items it names, not a copy of each whole table, which also keeps what
   other writers wrote to other items meanwhile, as DynamoDB does; an index's projection picks its attributes.

14. Batch DescribeJobs: moto's job description rebuilds its `container` block without the exit code it
   recorded, and its attempts carry none. AWS gives a finished job's `container.exitCode` and each attempt's
   `container.exitCode` and `statusReason` (DescribeJobs: JobDetail, ContainerDetail, AttemptDetail,
   AttemptContainerDetail). Here the job's exit code is in both, as on AWS.

15. Batch's ECS clusters: moto names every compute environment's cluster `OnDemand_Batch_<uuid>`. AWS Batch
   names it after the compute environment, `<name>_Batch_<uuid>` (AWS Batch API Reference,
   DescribeComputeEnvironments example: compute environment P2OnDemand, cluster P2OnDemand_Batch_2c06f29d-...),
   and GPU Pilot's IAM scopes its fleet reads and deregistrations to its compute environments' clusters by that
   name. Here the cluster is named as AWS Batch names it.
16. Simulated time in the workflow: moto's Step Functions engine really sleeps a Wait state's seconds and
   really waits out a task's TimeoutSeconds and HeartbeatSeconds. The local cloud runs simulated time
   `speedup` times faster (`--speedup`): here a Wait state's `Seconds`/`SecondsPath` and a task's
   `TimeoutSeconds`/`TimeoutSecondsPath`/`HeartbeatSeconds`/`HeartbeatSecondsPath` pass `speedup` times
   faster too, so a workflow that polled on a timer would poll as often per simulated hour as on AWS. A
   timeout is never scaled below a few real seconds (or its own length, if shorter): the local fleet's steps
   and the handlers' work take real time that speedup does not shorten. A `Timestamp` wait and a Retry's
   backoff keep real time.
17. EC2 GetConsoleOutput: moto answers every instance with one fixed sample of a 2006 Xen kernel's boot, and
   ignores `Latest`. Here an instance of the simulated fleet answers with its own console (its boot, the boot
   check's verdict, its kernel's GPU errors), the latest 64 KB, as EC2 keeps "Only the most recent 64 KB of console
   output" (GetConsoleOutput); other instances keep moto's sample.
18. ECS UpdateContainerInstancesState: moto fails with a server error (HTTP 500) on a cluster that never had a
   container instance, and takes any number of them. AWS takes "A list of up to 10 container instance IDs or full
   ARN entries" and answers an instance it does not know with a `failures` entry, as DescribeContainerInstances
   does (reason MISSING). Here both are answered as AWS answers them.
19. ECS DescribeContainerInstances `include=CONTAINER_INSTANCE_HEALTH`: moto supports only TAGS and never returns
   `healthStatus`. AWS returns it when asked ("If this field is omitted, tags and container instance health status
   aren't included in the response"), and on the EC2 launch type it checks the container runtime ("The Amazon ECS
   container agent detects a change in container runtime health ... Availability: EC2 launch type"). Here it is
   returned when asked: CONTAINER_RUNTIME OK, or IMPAIRED where the simulator says so (`gpupilot_impaired`).
20. EC2's reserved capacity: moto implements no Capacity Reservation or Capacity Block call
   (DescribeCapacityReservations, DescribeCapacityBlockOfferings and PurchaseCapacityBlock raise
   NotImplementedError). Here they answer from the world's `capacity_reservations` and
   `capacity_block_offerings` (reservations.py), in botocore's shapes: a reservation's state follows its window
   (scheduled, active, expired), its AvailableInstanceCount drops as the fleet launches instances into it, the
   `state`, `instance-type`, `availability-zone` and `instance-match-criteria` filters and MaxResults/NextToken
   paging are honoured, an unknown id is InvalidCapacityReservationId.NotFound, and an offering is bought once
   (a targeted Capacity Block reservation from the offering's start).
21. Capacity regions: 3., 5., 6. and 10. answer each region from its own part of the world (`regions.<name>`): the
   region of the call's endpoint (Service Quotas and spot placement scores are per account and region:
   GetServiceQuota, GetSpotPlacementScores `RegionNames`), and a compute environment's region from its ARN.
22. DynamoDB index pages: "The maximum size of the results returned by a Query operation is 1 MB. This
   includes the sizes of all the attribute names and values across all of the items returned", and an index
   query is sized by "the sizes of the index entries, rather than the size of the item in the base table"
   (DynamoDB Developer Guide, Using Global Secondary Indexes, read capacity units). moto sizes the table's whole
   items, so an index that projects a few attributes of large items answers in many more pages
   than DynamoDB does (the sweep's index of unfinished jobs: twice as many). Here a Query of a KEYS_ONLY or
   INCLUDE index walks the index's entries (the items carrying its keys, as projected), sized as DynamoDB
   sizes them.

tests/integration/test_moto_adaptations.py holds one test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpupilot.localcloud.dispatch import HandlerDispatcher
from gpupilot.localcloud.moto_speed import (
    direct_dynamodb_item_answers,
    item_level_transactions,
    parse_each_definition_once,
    pick_projected_attributes,
    share_task_clients,
)
from gpupilot.localcloud.reservations import ReservationBook

SERVICE_LINKED_ROLE_PATH = "/aws-service-role/batch.amazonaws.com/"
NOT_VALID_MESSAGE = (
    "computeEnvironmentOrder: compute environment {arn} is {status}; a job queue can only be associated with "
    "compute environments that are VALID"
)


DELETING, DELETED, GONE = "DELETING", "DELETED", "GONE"


@dataclass
class ComputeEnvironmentLifecycle:
    """When each compute environment was created, and what the world makes of it; when each compute environment
    or job queue was deleted: DELETING for `delete_seconds`, then DELETED (still described) for `deleted_seconds`,
    then gone."""

    create_seconds: float = 1.0
    invalid_reason: Callable[[list[str]], str | None] = field(default=lambda _types: None)
    # Another region's world (its compute environments' ARNs name it): region -> its invalid_reason.
    invalid_reason_in: dict[str, Callable[[list[str]], str | None]] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    delete_seconds: float = 0.0
    deleted_seconds: float = 0.0
    _created: dict[str, float] = field(default_factory=dict)
    _deleted: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def created(self, arn: str) -> None:
        with self._lock:
            self._created[arn] = self.clock()

    def deleted(self, arn: str) -> None:
        """Its deletion starts now (a second DeleteX does not restart it)."""
        with self._lock:
            self._deleted.setdefault(arn, self.clock())

    def deletion(self, arn: str) -> str | None:
        """Where its deletion stands now: DELETING, DELETED (still described), GONE, or None (not deleted)."""
        with self._lock:
            deleted = self._deleted.get(arn)
        if deleted is None:
            return None
        age = self.clock() - deleted
        if age < self.delete_seconds:
            return DELETING
        return DELETED if age < self.delete_seconds + self.deleted_seconds else GONE

    def forget(self, arn: str) -> None:
        with self._lock:
            self._deleted.pop(arn, None)
            self._created.pop(arn, None)

    def status(self, arn: str, instance_types: list[str]) -> tuple[str, str]:
        """(status, statusReason) of the compute environment now."""
        if self.deletion(arn) is not None:
            return DELETING, "Compute environment is being deleted"
        with self._lock:
            created = self._created.get(arn)
        if created is not None and self.clock() - created < self.create_seconds:
            return "CREATING", "Compute environment is being created"
        region = arn.split(":")[3] if arn.count(":") >= 5 else ""
        reason = self.invalid_reason_in.get(region, self.invalid_reason)(instance_types)
        if reason:
            return "INVALID", reason
        return "VALID", "ComputeEnvironment Healthy"


class _Patches:
    """Attribute replacements, undone in reverse order."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def replace(self, owner: Any, name: str, value: Any) -> Any:
        original = getattr(owner, name)
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, original))
        return original

    def on_exit(self, undo: Callable[[], None]) -> None:
        self._undo.append(undo)

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()


def run_handlers_in_process(patches: _Patches, dispatcher: HandlerDispatcher) -> None:
    """1. Lambda invokes run the real handlers; `Event` invokes run in the background."""
    import json

    from moto.awslambda_simple.models import LambdaSimpleBackend

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> bytes:
        fn = self.get_function(function_name, qualifier)
        key = dispatcher.by_name(fn.function_name).key
        event = json.loads(body) if body else {}
        if (headers or {}).get("X-Amz-Invocation-Type") == "Event":
            dispatcher.invoke_async(key, event)
            return b""
        result, errored = dispatcher.invoke(key, event)
        if errored:
            response_headers["x-amz-function-error"] = "Unhandled"
        payload = json.dumps(result).encode()
        response_headers["Content-Length"] = str(len(payload))
        return payload

    original_update = LambdaSimpleBackend.update_function_configuration

    def update_configuration(self: Any, function_name: str, qualifier: str, body: dict[str, Any]) -> Any:
        answer = original_update(self, function_name, qualifier, body)
        variables = (body.get("Environment") or {}).get("Variables")
        if variables is not None:
            with contextlib.suppress(KeyError):  # not (yet) a function of the local deployment
                dispatcher.update_environment(self.get_function(function_name, qualifier).function_name, variables)
        return answer

    patches.replace(LambdaSimpleBackend, "invoke", invoke)
    patches.replace(LambdaSimpleBackend, "update_function_configuration", update_configuration)


def hand_jobs_to_simulator(patches: _Patches, on_submit: Callable[[Any], None]) -> None:
    """2. A submitted Batch job goes to the simulator instead of SUCCEEDED."""
    from moto.batch_simple.models import BatchSimpleBackend

    def mark_submitted(self: Any, include_start_attempt: bool, job: Any) -> None:
        # No log stream yet: Batch names an attempt's stream when it reaches RUNNING (the simulator does).
        self.backend._jobs[job.job_id] = job
        on_submit(job)

    patches.replace(BatchSimpleBackend, "_mark_job_as_finished", mark_submitted)


def compute_environment_lifecycle(patches: _Patches, lifecycle: ComputeEnvironmentLifecycle) -> None:
    """3. and 4. Compute environments pass through CREATING; queues are refused on non-VALID ones."""
    from moto.batch.exceptions import ClientException
    from moto.batch.models import BatchBackend

    original_create = BatchBackend.create_compute_environment
    original_describe = BatchBackend.describe_compute_environments
    original_queue = BatchBackend.create_job_queue

    def create(
        self: Any,
        compute_environment_name: str,
        _type: str,
        state: str,
        compute_resources: dict[str, Any],
        service_role: str | None,
        tags: dict[str, str] | None = None,
    ) -> Any:
        if not service_role:
            service_role = _service_linked_role(self)
        environment = original_create(
            self, compute_environment_name, _type, state, compute_resources, service_role, tags=tags
        )
        lifecycle.created(environment.arn)
        return environment

    def describe(self: Any, environments: list[str] | None = None) -> list[dict[str, Any]]:
        described = original_describe(self, environments)
        for entry in described:
            types = (entry.get("computeResources") or {}).get("instanceTypes") or []
            entry["status"], entry["statusReason"] = lifecycle.status(entry["computeEnvironmentArn"], types)
        return described

    def create_queue(
        self: Any,
        queue_name: str,
        priority: str,
        schedule_policy: str | None,
        state: str,
        compute_env_order: list[dict[str, str]],
        tags: dict[str, str] | None = None,
    ) -> Any:
        for item in compute_env_order or []:
            environment = self.get_compute_environment(item.get("computeEnvironment", ""))
            if environment is None:
                continue  # moto's own check says it does not exist
            status, _ = lifecycle.status(
                environment.arn, (environment.compute_resources or {}).get("instanceTypes") or []
            )
            if status != "VALID":
                raise ClientException(NOT_VALID_MESSAGE.format(arn=environment.arn, status=status))
        return original_queue(self, queue_name, priority, schedule_policy, state, compute_env_order, tags=tags)

    patches.replace(BatchBackend, "create_compute_environment", create)
    patches.replace(BatchBackend, "describe_compute_environments", describe)
    patches.replace(BatchBackend, "create_job_queue", create_queue)


def _service_linked_role(batch: Any) -> str:
    """Batch's service-linked role (created on first use, as AWS does); its ARN."""
    iam = batch.iam_backend
    for role in iam.get_roles():
        if role.path == SERVICE_LINKED_ROLE_PATH:
            return str(role.arn)
    return str(iam.create_service_linked_role("batch.amazonaws.com", "AWS Batch service-linked role", "").arn)


def world_offerings(patches: _Patches, region: str, zones: list[str], offered: dict[str, list[str]]) -> None:
    """5. Per-zone instance type offerings of the given types come from the world."""
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS

    by_zone = INSTANCE_TYPE_OFFERINGS["availability-zone"]
    original = list(by_zone.get(region, []))
    kept = [o for o in original if o["InstanceType"] not in offered]
    for instance_type, type_zones in offered.items():
        kept.extend({"InstanceType": instance_type, "Location": z} for z in type_zones if z in zones)
    by_zone[region] = kept
    patches.on_exit(lambda: by_zone.__setitem__(region, original))


# A world that sets no quota has room for any fleet it simulates.
DEFAULT_VCPU_QUOTA = 4096.0


def world_quotas(
    patches: _Patches, quotas: dict[str, int], by_region: Mapping[str, dict[str, int]] | None = None
) -> None:
    """6. GetServiceQuota answers EC2's GPU vCPU quotas (the world's, else a roomy default), each region its own
    (`by_region`: the other regions' quotas; Service Quotas are per account and region)."""
    from moto.servicequotas.models import ServiceQuotasBackend

    from functions.shared.domain.fleet import QUOTA_NAMES

    original = ServiceQuotasBackend.get_service_quota

    def get_service_quota(self: Any, service_code: str, quota_code: str) -> dict[str, Any]:
        if service_code != "ec2" or quota_code not in QUOTA_NAMES:
            return dict(original(self, service_code, quota_code))
        return {
            "ServiceCode": "ec2",
            "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
            "QuotaArn": f"arn:aws:servicequotas:{self.region_name}:{self.account_id}:ec2/{quota_code}",
            "QuotaCode": quota_code,
            "QuotaName": QUOTA_NAMES[quota_code],
            "Value": float((by_region or {}).get(self.region_name, quotas).get(quota_code, DEFAULT_VCPU_QUOTA)),
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }

    patches.replace(ServiceQuotasBackend, "get_service_quota", get_service_quota)


LIST_JOBS_DEFAULT_PAGE = 100


def paginated_list_jobs(patches: _Patches) -> None:
    """7. ListJobs answers a page of maxResults summaries and a nextToken for the rest."""
    import json

    from moto.batch.responses import BatchResponse

    def listjobs(self: Any) -> str:
        jobs = self.batch_backend.list_jobs(
            job_queue_name=self._get_param("jobQueue"),
            array_job_id=self._get_param("arrayJobId"),
            job_status=self._get_param("jobStatus"),
            filters=self._get_param("filters"),
        )
        size = int(self._get_param("maxResults") or LIST_JOBS_DEFAULT_PAGE)
        start = int(self._get_param("nextToken") or 0)
        page: dict[str, Any] = {"jobSummaryList": [job.describe_short() for job in jobs[start : start + size]]}
        if start + size < len(jobs):
            page["nextToken"] = str(start + size)
        return json.dumps(page)

    patches.replace(BatchResponse, "listjobs", listjobs)


def keep_time_limit_actions(patches: _Patches) -> None:
    """9. CreateJobQueue's jobStateTimeLimitActions are kept and described."""
    from moto.batch.models import JobQueue
    from moto.batch.responses import BatchResponse

    original_create = BatchResponse.createjobqueue
    original_describe = JobQueue.describe

    def createjobqueue(self: Any) -> str:
        answer = original_create(self)
        actions = self._get_param("jobStateTimeLimitActions")
        if actions:
            self.batch_backend.get_job_queue(self._get_param("jobQueueName")).time_limit_actions = actions
        return answer

    def describe(self: Any) -> dict[str, Any]:
        described = original_describe(self)
        actions = getattr(self, "time_limit_actions", None)
        return described | ({"jobStateTimeLimitActions": actions} if actions else {})

    patches.replace(BatchResponse, "createjobqueue", createjobqueue)
    patches.replace(JobQueue, "describe", describe)


def report_exit_codes(patches: _Patches) -> None:
    """14. A finished job's DescribeJobs carries its exit code (and its last attempt's reason) in `container`, and
    its exit code in its last attempt."""
    from moto.batch.models import Job

    original = Job.describe

    def describe(self: Any) -> dict[str, Any]:
        described = original(self)
        container = described.get("container")
        last_reason = ((self.attempts or [{}])[-1].get("container") or {}).get("reason")
        if self.job_stopped and last_reason and isinstance(container, dict):
            # ContainerDetail.reason: "A short (255 max characters) string to provide additional details about a
            # running or stopped container", the last attempt's.
            described["container"] = container = {**container, "reason": last_reason}
        if self.job_stopped and self.exit_code is not None and isinstance(container, dict):
            described["container"] = {**container, "exitCode": self.exit_code}
            if described.get("attempts"):  # moto's own list: described anew, never changed
                *earlier, last = described["attempts"]
                last = {**last, "container": {**last.get("container", {}), "exitCode": self.exit_code}}
                if self.job_stopped_reason:
                    last.setdefault("statusReason", self.job_stopped_reason)
                described["attempts"] = [*earlier, last]
        return described

    patches.replace(Job, "describe", describe)


DISABLED_QUEUE_MESSAGE = "Job queue {arn} is DISABLED: it does not accept new jobs"


def refuse_disabled_queues(patches: _Patches) -> None:
    """8. SubmitJob into a DISABLED queue is a ClientException (the jobs already in it still run)."""
    from moto.batch.exceptions import ClientException
    from moto.batch.models import BatchBackend
    from moto.batch_simple.models import BatchSimpleBackend

    for backend in (BatchBackend, BatchSimpleBackend):
        original = backend.submit_job

        def submit(self: Any, job_name: str, job_def_id: str, job_queue: str, *args: Any,
                   _original: Any = original, **kwargs: Any) -> Any:  # fmt: skip
            queue = self.get_job_queue(job_queue)
            if queue is not None and queue.state == "DISABLED":
                raise ClientException(DISABLED_QUEUE_MESSAGE.format(arn=queue.arn))
            return _original(self, job_name, job_def_id, job_queue, *args, **kwargs)

        patches.replace(backend, "submit_job", submit)


BATCH_CLUSTER_NAME = "{environment}_Batch_{uuid}"


def index_pages_of_index_entries(patches: _Patches) -> None:
    """17. A Query of a KEYS_ONLY or INCLUDE index pages by the size of its entries, not of the table's items."""
    from moto.dynamodb.models.table import Table

    query: Callable[..., Any] = Table.query
    all_items: Callable[..., Any] = Table.all_items
    querying = threading.local()  # the index a Query of this thread walks: other threads' reads see whole items

    def index_entries(self: Any) -> Any:
        index: Any = getattr(querying, "index", None)
        if index is None or getattr(querying, "table", None) is not self:
            return all_items(self)
        keys = index.schema_key_attrs
        return [index.project(item) for item in all_items(self) if all(key in item.attrs for key in keys)]

    def paged_by_entries(self: Any, *args: Any, **kwargs: Any) -> Any:
        name = inspect.signature(query).bind(self, *args, **kwargs).arguments.get("index_name")
        index = next((i for i in self.all_indexes() if i.name == name), None) if name else None
        if index is None or (index.projection or {}).get("ProjectionType") not in ("KEYS_ONLY", "INCLUDE"):
            return query(self, *args, **kwargs)
        querying.index, querying.table = index, self
        try:
            return query(self, *args, **kwargs)
        finally:
            querying.index = querying.table = None

    patches.replace(Table, "all_items", index_entries)
    patches.replace(Table, "query", paged_by_entries)


def name_clusters_as_batch_does(patches: _Patches) -> None:
    """15. A new compute environment's ECS cluster is `<compute environment name>_Batch_<uuid>`."""
    import uuid

    from moto.batch.models import BatchBackend

    original = BatchBackend.create_compute_environment

    def create(self: Any, compute_environment_name: str, *args: Any, **kwargs: Any) -> Any:
        environment = original(self, compute_environment_name, *args, **kwargs)
        named = BATCH_CLUSTER_NAME.format(environment=environment.name, uuid=uuid.uuid4())
        if environment.ecs_name and not environment.ecs_name.startswith(f"{environment.name}_Batch_"):
            # Replaced without a trace: AWS never had moto's name (a deleted cluster would stay listed INACTIVE).
            self.ecs_backend.clusters.pop(environment.ecs_name, None)
            environment.set_ecs(self.ecs_backend.create_cluster(named).arn, named)
        return environment

    patches.replace(BatchBackend, "create_compute_environment", create)


MAX_COMPUTE_ENVIRONMENTS = 50
MAX_JOB_QUEUES = 50
LIMIT_MESSAGE = "{what} limit exceeded: this region has {count} and AWS Batch allows {limit}"
DELETE_ENABLED_QUEUE = "Job queue {arn} must be DISABLED before it can be deleted (UpdateJobQueue state=DISABLED)"
DELETE_ENABLED_ENVIRONMENT = "Compute environment {arn} must be DISABLED before it can be deleted"
DELETE_ORDERED_ENVIRONMENT = "Compute environment {arn} is ordered by job queue {queue}: disassociate it first"
NAME_TAKEN = "Object already exists: {what} {name} is {status}"


def batch_deletions_and_limits(patches: _Patches, lifecycle: ComputeEnvironmentLifecycle) -> None:
    """12. Deletions in Batch's order only, taking time (DELETING, then DELETED and still described, their names
    taken until they are gone); at most 50 compute environments and 50 job queues."""
    from moto.batch.exceptions import ClientException
    from moto.batch.models import BatchBackend

    original_create = BatchBackend.create_compute_environment
    original_queue = BatchBackend.create_job_queue
    original_delete_queue = BatchBackend.delete_job_queue
    original_delete_environment = BatchBackend.delete_compute_environment
    original_describe = BatchBackend.describe_compute_environments
    original_describe_queues = BatchBackend.describe_job_queues
    # What Batch deleted and still describes (DELETED), per region and kind: name -> (ARN, its last description).
    shown: dict[tuple[str, str, str], dict[str, tuple[str, dict[str, Any]]]] = {}
    settling = threading.Lock()  # the embedded server answers the functions' calls in several threads

    def deleted(backend: Any, kind: str) -> dict[str, tuple[str, dict[str, Any]]]:
        return shown.setdefault((backend.account_id, backend.region_name, kind), {})

    def settle(backend: Any) -> None:
        """What Batch has finished deleting leaves moto (with its ECS cluster); it is still described, DELETED,
        until Batch forgets it."""
        with settling:
            _settle(backend)

    def _settle(backend: Any) -> None:
        for arn, queue in list(backend._job_queues.items()):
            if lifecycle.deletion(arn) in (DELETED, GONE):
                gone = {"status": DELETED, "statusReason": "Job queue deleted"}
                deleted(backend, "queue")[queue.name] = (arn, queue.describe() | gone)
                original_delete_queue(backend, arn)
        for arn, environment in list(backend._compute_environments.items()):
            if lifecycle.deletion(arn) in (DELETED, GONE):
                [described] = original_describe(backend, [arn])
                gone = {"status": DELETED, "statusReason": "Compute environment deleted"}
                deleted(backend, "environment")[environment.name] = (arn, described | gone)
                original_delete_environment(backend, arn)
        for kind in ("queue", "environment"):
            still = deleted(backend, kind)
            for name, (arn, _) in list(still.items()):
                if lifecycle.deletion(arn) == GONE:
                    del still[name]
                    lifecycle.forget(arn)

    def refuse_taken(existing: Any, still: dict[str, Any], what: str, name: str) -> None:
        """Batch keeps a name while it shows what had it, being deleted or deleted."""
        if name in still:
            raise ClientException(NAME_TAKEN.format(what=what, name=name, status=DELETED))
        if existing is not None and lifecycle.deletion(existing.arn) == DELETING:
            raise ClientException(NAME_TAKEN.format(what=what, name=name, status=DELETING))

    def create(self: Any, compute_environment_name: str, *args: Any, **kwargs: Any) -> Any:
        settle(self)
        existing = self.get_compute_environment(compute_environment_name)
        refuse_taken(existing, deleted(self, "environment"), "compute environment", compute_environment_name)
        count = len(self._compute_environments)
        if count >= MAX_COMPUTE_ENVIRONMENTS and existing is None:
            raise ClientException(
                LIMIT_MESSAGE.format(what="Compute environment", count=count, limit=MAX_COMPUTE_ENVIRONMENTS)
            )
        return original_create(self, compute_environment_name, *args, **kwargs)

    def create_queue(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        settle(self)
        existing = self.get_job_queue(queue_name)
        refuse_taken(existing, deleted(self, "queue"), "job queue", queue_name)
        count = len(self._job_queues)
        if count >= MAX_JOB_QUEUES and existing is None:
            raise ClientException(LIMIT_MESSAGE.format(what="Job queue", count=count, limit=MAX_JOB_QUEUES))
        return original_queue(self, queue_name, *args, **kwargs)

    def delete_queue(self: Any, queue_name: str) -> None:
        settle(self)
        queue = self.get_job_queue(queue_name)
        if queue is None:
            return original_delete_queue(self, queue_name)
        if queue.state != "DISABLED":
            raise ClientException(DELETE_ENABLED_QUEUE.format(arn=queue.arn))
        lifecycle.deleted(queue.arn)
        settle(self)
        return None

    def delete_environment(self: Any, compute_environment_name: str) -> None:
        settle(self)
        environment = self.get_compute_environment(compute_environment_name)
        if environment is None:
            return original_delete_environment(self, compute_environment_name)
        if environment.state != "DISABLED":
            raise ClientException(DELETE_ENABLED_ENVIRONMENT.format(arn=environment.arn))
        # A queue Batch is still deleting still orders it.
        for queue in self._job_queues.values():
            if any(e.arn == environment.arn for e in getattr(queue, "environments", [])):
                raise ClientException(DELETE_ORDERED_ENVIRONMENT.format(arn=environment.arn, queue=queue.name))
        lifecycle.deleted(environment.arn)
        settle(self)
        return None

    def still_shown(backend: Any, kind: str, wanted: list[str] | None) -> list[dict[str, Any]]:
        return [d for name, (arn, d) in deleted(backend, kind).items() if not wanted or {name, arn} & set(wanted)]

    def describe(self: Any, environments: list[str] | None = None) -> list[dict[str, Any]]:
        settle(self)
        return list(original_describe(self, environments)) + still_shown(self, "environment", environments)

    def describe_queues(self: Any, job_queues: list[str] | None = None) -> list[dict[str, Any]]:
        settle(self)
        described = list(original_describe_queues(self, job_queues))
        for queue in described:
            if lifecycle.deletion(queue["jobQueueArn"]) == DELETING:
                queue |= {"status": DELETING, "statusReason": "Job queue is being deleted"}
        return described + still_shown(self, "queue", job_queues)

    patches.replace(BatchBackend, "create_compute_environment", create)
    patches.replace(BatchBackend, "create_job_queue", create_queue)
    patches.replace(BatchBackend, "delete_job_queue", delete_queue)
    patches.replace(BatchBackend, "delete_compute_environment", delete_environment)
    patches.replace(BatchBackend, "describe_compute_environments", describe)
    patches.replace(BatchBackend, "describe_job_queues", describe_queues)


# What a simulated spot offering costs when the world does not say: spot is typically well below on-demand.
DEFAULT_SPOT_FRACTION = 0.4
# AWS scores a request of fewer instance types than this low, whatever the capacity; low is 3 at most here.
FEW_TYPES_FOR_A_SCORE = 3
FEW_TYPES_SCORE = 3


@dataclass
class SpotMarket:
    """10. The world's spot market: price and placement score by type, and the zones that offer each."""

    offered: Callable[[str], list[str]]
    hourly_usd: dict[str, float] = field(default_factory=dict)
    placement_score: dict[str, int] = field(default_factory=dict)
    region: str = "us-east-1"

    def price(self, instance_type: str) -> float | None:
        if instance_type in self.hourly_usd:
            return self.hourly_usd[instance_type]
        from functions.shared.adapters.prices import SnapshotPrices

        quote = SnapshotPrices(self.region).on_demand(instance_type)
        return round(quote.hourly_usd * DEFAULT_SPOT_FRACTION, 4) if quote else None


def world_spot_market(patches: _Patches, market: SpotMarket, by_region: Mapping[str, SpotMarket] | None = None) -> None:
    """10. DescribeSpotPriceHistory and GetSpotPlacementScores answer from the world, each region its own market
    (`by_region`: the other regions')."""

    def market_of(response: Any) -> SpotMarket:
        return (by_region or {}).get(response.region, market)

    from datetime import UTC, datetime

    from moto.core.responses import ActionResult
    from moto.ec2.responses import EC2Response

    def describe_spot_price_history(self: Any) -> ActionResult:
        types = self._get_param("InstanceTypes", []) or []
        zones = self._filters_from_querystring().get("availability-zone")
        # The world's price holds at all times: answered as the one in effect at StartTime (or now).
        now = self._get_param("StartTime") or datetime.now(UTC).isoformat()
        market = market_of(self)
        history = [
            {"InstanceType": t, "ProductDescription": "Linux/UNIX", "SpotPrice": f"{price:.6f}",
             "AvailabilityZone": zone, "Timestamp": now}
            for t in types
            for price in [market.price(t)]
            if price is not None
            for zone in market.offered(t)
            if zones is None or zone in zones
        ]  # fmt: skip
        return ActionResult({"SpotPriceHistory": history})

    def get_spot_placement_scores(self: Any) -> ActionResult:
        types = self._get_param("InstanceTypes", []) or []
        zone_ids = {z.name: z.zone_id for z in self.ec2_backend.describe_availability_zones()}
        market = market_of(self)
        scores = []
        for zone, zone_id in sorted(zone_ids.items()):
            # A set of types is as likely as its likeliest type offered in the zone; one or two types, low.
            offering = [t for t in types if zone in market.offered(t)]
            if offering:
                score = max(market.placement_score.get(t, 9) for t in offering)
                if len(set(types)) < FEW_TYPES_FOR_A_SCORE:
                    score = min(score, FEW_TYPES_SCORE)
                scores.append({"Region": self.region, "AvailabilityZoneId": zone_id, "Score": score})
        return ActionResult({"SpotPlacementScores": scores})

    patches.replace(EC2Response, "describe_spot_price_history", describe_spot_price_history)
    if hasattr(EC2Response, "get_spot_placement_scores"):
        patches.replace(EC2Response, "get_spot_placement_scores", get_spot_placement_scores)
    else:
        EC2Response.get_spot_placement_scores = get_spot_placement_scores  # type: ignore[attr-defined]
        patches.on_exit(lambda: delattr(EC2Response, "get_spot_placement_scores"))


def _ec2_action(patches: _Patches, name: str, method: Callable[..., Any]) -> None:
    """An EC2 query action on moto's EC2 responder: replaced when moto has it, added (and removed after) when not."""
    from moto.ec2.responses import EC2Response

    if hasattr(EC2Response, name):
        patches.replace(EC2Response, name, method)
    else:
        setattr(EC2Response, name, method)
        patches.on_exit(lambda: delattr(EC2Response, name))


def _ec2_error(code: str, message: str) -> Exception:
    from moto.ec2.exceptions import EC2ClientError

    return EC2ClientError(code, message)


def _page(items: list[dict[str, Any]], token: str | None, max_results: Any) -> tuple[list[dict[str, Any]], str | None]:
    """One page of `items` (MaxResults, default all; NextToken: the index to go on from)."""
    start = int(token) if token and str(token).isdigit() else 0
    size = int(max_results) if max_results else len(items) or 1
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


def world_reservations(patches: _Patches, book: ReservationBook) -> None:
    """20. DescribeCapacityReservations, DescribeCapacityBlockOfferings and PurchaseCapacityBlock answer from the
    world's reservations and offerings of the call's region."""
    from moto.core.responses import ActionResult

    def describe_capacity_reservations(self: Any) -> ActionResult:
        ids = self._get_param("CapacityReservationIds", []) or []
        found = book.described(self.region, ids)
        missing = sorted(set(ids) - {r["CapacityReservationId"] for r in found})
        if missing:
            raise _ec2_error(
                "InvalidCapacityReservationId.NotFound", f"The capacity reservation ID '{missing[0]}' does not exist"
            )
        filters = self._filters_from_querystring()
        keys = {"state": "State", "instance-type": "InstanceType", "availability-zone": "AvailabilityZone",
                "instance-match-criteria": "InstanceMatchCriteria"}  # fmt: skip
        for name, values in filters.items():
            if name in keys:
                found = [r for r in found if r[keys[name]] in values]
        page, token = _page(found, self._get_param("NextToken"), self._get_param("MaxResults"))
        return ActionResult({"CapacityReservations": page, "NextToken": token})

    def describe_capacity_block_offerings(self: Any) -> ActionResult:
        hours = self._get_param("CapacityDurationHours")
        if hours is None:
            raise _ec2_error("MissingParameter", "The request must contain the parameter CapacityDurationHours")
        wanted_type = self._get_param("InstanceType")
        count = self._get_param("InstanceCount")
        offered = [
            o.described()
            for o in book.offered(self.region)
            if (not wanted_type or o.instance_type == wanted_type)
            and (count is None or o.count == int(count))
            and int(o.hours) == int(hours)
        ]
        page, token = _page(offered, self._get_param("NextToken"), self._get_param("MaxResults"))
        return ActionResult({"CapacityBlockOfferings": page, "NextToken": token})

    def purchase_capacity_block(self: Any) -> ActionResult:
        offering_id = self._get_param("CapacityBlockOfferingId")
        specs = self._get_param("TagSpecifications", []) or []
        tags = {t["Key"]: t.get("Value", "") for spec in specs for t in spec.get("Tags") or []}
        bought = book.purchase(offering_id, tags, self.region)
        if bought is None:
            raise _ec2_error("InvalidParameterValue", f"The Capacity Block offering {offering_id} is not available")
        described = bought.described(book.now())
        return ActionResult({"CapacityReservation": described, "CapacityReservations": [described]})

    _ec2_action(patches, "describe_capacity_reservations", describe_capacity_reservations)
    _ec2_action(patches, "describe_capacity_block_offerings", describe_capacity_block_offerings)
    _ec2_action(patches, "purchase_capacity_block", purchase_capacity_block)


PRICE_LIST_TARGET = "AWSPriceListService."
# The families EC2 sells in Capacity Blocks (EC2 User Guide, "How Capacity Blocks work"): the Price List has a
# Capacity Block product of each of their types beside the on-demand one.
CAPACITY_BLOCK_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200")
# A Capacity Block product's hourly rate here: not the on-demand price (Capacity Blocks are priced per offering).
CAPACITY_BLOCK_RATE = 0.5


def price_list_answer(target: str, body: bytes) -> tuple[int, dict[str, str], str]:
    """11. The Price List API's GetProducts over the bundled on-demand snapshots, one per region."""
    import json

    from functions.shared.adapters.prices import snapshot_regions, snapshot_table

    headers = {"Content-Type": "application/x-amz-json-1.1"}
    if not target.endswith(".GetProducts"):
        error = {"__type": "InvalidParameterException", "Message": f"{target} is not served by the local cloud"}
        return 400, headers, json.dumps(error)
    request = json.loads(body or b"{}")
    wanted = {f["Field"]: f["Value"] for f in request.get("Filters", [])}
    regions = [wanted["regionCode"]] if "regionCode" in wanted else snapshot_regions()
    products = []
    for region in regions if request.get("ServiceCode") == "AmazonEC2" else []:
        for instance_type, hourly in sorted(snapshot_table(region).items()):
            offers = [("OnDemand", hourly)]
            if instance_type.split(".")[0] in CAPACITY_BLOCK_FAMILIES:
                offers.append(("CapacityBlock", round(hourly * CAPACITY_BLOCK_RATE, 4)))
            for market, rate in offers:
                product = _price_list_product(region, instance_type, market, rate)
                attributes = product["product"]["attributes"]
                # TERM_MATCH: a product matches when each filtered attribute has exactly that value.
                if all(attributes.get(field) == value for field, value in wanted.items()):
                    products.append(json.dumps(product))
    return 200, headers, json.dumps({"FormatVersion": "aws_v1", "PriceList": products})


def _price_list_product(region: str, instance_type: str, market: str, hourly: float) -> dict[str, Any]:
    """One Linux product of the Price List, sold `OnDemand` or in a `CapacityBlock`, with its on-demand term."""
    import zlib

    from functions.shared.adapters.prices import price_snapshot

    # The snapshot's prices were published no later than its date: each item says so, as the API's do.
    as_of = (price_snapshot(region) or {}).get("as_of", "1970-01-01")
    sku = f"SKU{zlib.crc32(f'{region}/{instance_type}/{market}'.encode()):010d}"
    operation = "RunInstances" if market == "OnDemand" else "RunInstances:CB"
    dimension = {"unit": "Hrs", "pricePerUnit": {"USD": f"{hourly:.10f}"}}
    return {
        "product": {"sku": sku, "productFamily": "Compute Instance", "attributes": {
            "servicecode": "AmazonEC2", "instanceType": instance_type, "regionCode": region,
            "operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
            "licenseModel": "No License required", "instanceFamily": "GPU instance", "marketoption": market,
            "operation": operation}},
        "terms": {"OnDemand": {f"{sku}.JRTCKXETXF": {"priceDimensions": {
            f"{sku}.JRTCKXETXF.6YS6EN2CT7": dimension}, "effectiveDate": f"{as_of}T00:00:00Z"}}},
        "version": as_of.replace("-", "") + "000000", "publicationDate": f"{as_of}T00:00:00Z",
    }  # fmt: skip


def serve_price_list(patches: _Patches) -> None:
    """11. GetProducts answered to the embedded server and to in-process mocks alike."""
    from moto.core.botocore_stubber import BotocoreStubber
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original_process = BotocoreStubber.process_request
    original_call = DomainDispatcherApplication.__call__

    def process_request(self: Any, request: Any) -> Any:
        target = request.headers.get("X-Amz-Target") or ""
        if isinstance(target, bytes):
            target = target.decode()
        if target.startswith(PRICE_LIST_TARGET):
            body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
            return price_list_answer(target, body)
        return original_process(self, request)

    def call(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith(PRICE_LIST_TARGET):
            return original_call(self, environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        status, headers, body = price_list_answer(target, environ["wsgi.input"].read(length))
        start_response(f"{status} {'OK' if status == 200 else 'Bad Request'}", list(headers.items()))
        return [body.encode()]

    patches.replace(BotocoreStubber, "process_request", process_request)
    patches.replace(DomainDispatcherApplication, "__call__", call)


# The local fleet's steps (an instance's boot, a job's start) and the handlers' own work take real seconds
# that speedup does not shorten: a timeout scaled below this would expire for want of them, not of time.
TIMEOUT_FLOOR_SECONDS = 10.0


@dataclass(frozen=True)
class WorkflowClock:
    """15. How fast the workflow's own time passes: `speedup` times faster than real time."""

    speedup: float = 1.0
    timeout_floor_seconds: float = TIMEOUT_FLOOR_SECONDS

    def wait_seconds(self, seconds: float) -> float:
        """The real seconds a Wait state of `seconds` lasts."""
        return seconds / self.speedup

    def timeout_seconds(self, seconds: float) -> float:
        """The real seconds a task's timeout (or heartbeat) of `seconds` lasts: scaled, but not below the floor."""
        return max(seconds / self.speedup, min(seconds, self.timeout_floor_seconds))


def _wait_until(env: Any, seconds: float) -> None:
    """Wait `seconds` (a float: moto's own wait rounds to whole seconds) unless the execution ends first."""
    deadline = time.monotonic() + seconds
    while env.is_running():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        env.program_state_event.wait(left)


def workflow_time(patches: _Patches, clock: WorkflowClock) -> None:
    """15. Wait states' Seconds/SecondsPath and tasks' timeouts and heartbeats pass at the clock's speed."""
    from moto.stepfunctions.parser.asl.component.common.timeouts.heartbeat import Heartbeat
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import Timeout
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.seconds import Seconds, SecondsJSONata
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.seconds_path import SecondsPath
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction

    relative = (Seconds, SecondsJSONata, SecondsPath)  # not Timestamp waits: those name a moment

    def wait_body(self: Any, env: Any) -> None:
        seconds = self._get_wait_seconds(env=env)
        _wait_until(env, clock.wait_seconds(seconds) if isinstance(self, relative) else seconds)

    def timeout_body(self: Any, env: Any) -> None:
        seconds = clock.timeout_seconds(self._eval_seconds(env=env))
        # Whole seconds stay an integer, as the execution history reports a timeout (TaskScheduled's timeoutInSeconds).
        env.stack.append(int(seconds) if float(seconds).is_integer() else seconds)

    patches.replace(WaitFunction, "_eval_body", wait_body)
    patches.replace(Timeout, "_eval_body", timeout_body)
    patches.replace(Heartbeat, "_eval_body", timeout_body)


@dataclass(frozen=True)
class RegionWorldView:
    """5., 6. and 10. for a capacity region beside the home one: its zones and offerings, quotas and spot market."""

    zones: list[str]
    offered: dict[str, list[str]]
    quotas: dict[str, int]
    spot: SpotMarket


CONSOLE_BYTES = 64 * 1024


def instance_consoles(patches: _Patches, console_of: Callable[[str], str | None]) -> None:
    """17. GetConsoleOutput answers each simulated instance with its own console, its latest 64 KB."""
    from moto.core.responses import ActionResult
    from moto.core.utils import utcnow
    from moto.ec2.responses.general import General
    from moto.ec2.utils import Base64EncodedString

    original = General.get_console_output

    def get_console_output(self: Any) -> Any:
        instance = self.ec2_backend.get_instance(self._get_param("InstanceId"))  # unknown: InvalidInstanceID.NotFound
        text = console_of(instance.id)
        if text is None:
            return original(self)
        latest = text.encode()[-CONSOLE_BYTES:].decode(errors="ignore")
        return ActionResult(
            {"InstanceId": instance.id, "Timestamp": utcnow(), "Output": Base64EncodedString.from_raw_string(latest)}
        )

    patches.replace(General, "get_console_output", get_console_output)


MAX_STATE_UPDATES = 10


def container_instance_states(patches: _Patches) -> None:
    """18. UpdateContainerInstancesState: 10 instances at most; an unknown one is a `failures` entry, never a 500."""
    from moto.ecs.exceptions import InvalidParameterException
    from moto.ecs.models import EC2ContainerServiceBackend

    original = EC2ContainerServiceBackend.update_container_instances_state

    def update(self: Any, cluster_str: str, ids: list[str], status: str) -> Any:
        if len(ids) > MAX_STATE_UPDATES:
            raise InvalidParameterException(f"containerInstances: {len(ids)} given, {MAX_STATE_UPDATES} at most")
        cluster = self._get_cluster(cluster_str)  # unknown: ClusterNotFoundException
        self.container_instances.setdefault(cluster.name, {})
        return original(self, cluster_str, ids, status)

    patches.replace(EC2ContainerServiceBackend, "update_container_instances_state", update)


def container_instance_health(patches: _Patches) -> None:
    """19. DescribeContainerInstances gives `healthStatus` when asked (CONTAINER_INSTANCE_HEALTH), as on EC2."""
    import copy

    from moto.core.responses import ActionResult
    from moto.core.utils import utcnow
    from moto.ecs.responses import EC2ContainerServiceResponse

    def health(instance: Any) -> dict[str, Any]:
        impaired = getattr(instance, "gpupilot_impaired", None)
        check = {"type": "CONTAINER_RUNTIME", "status": "IMPAIRED" if impaired else "OK", "lastUpdated": utcnow()}
        if impaired:
            check["statusReason"] = impaired
        return {"overallStatus": check["status"], "details": [check]}

    original = EC2ContainerServiceResponse.describe_container_instances

    def describe(self: Any) -> Any:
        if "CONTAINER_INSTANCE_HEALTH" not in (self._get_param("include") or []):
            return original(self)
        instances, failures = self.ecs_backend.describe_container_instances(
            self._get_param("cluster", "default"), self._get_param("containerInstances")
        )
        # Copies carry the health: the backend's own objects stay as they are for other callers.
        answered = [copy.copy(instance) for instance in instances]
        for instance in answered:
            instance.health_status = health(instance)
        return ActionResult({"failures": failures, "containerInstances": answered})

    patches.replace(EC2ContainerServiceResponse, "describe_container_instances", describe)


@contextlib.contextmanager
def adapted_moto(
    *,
    dispatcher: HandlerDispatcher | None = None,
    on_job_submitted: Callable[[Any], None] | None = None,
    lifecycle: ComputeEnvironmentLifecycle | None = None,
    offerings: tuple[str, list[str], dict[str, list[str]]] | None = None,
    quotas: dict[str, int] | None = None,
    spot_market: SpotMarket | None = None,
    workflow_clock: WorkflowClock | None = None,
    regions: Mapping[str, RegionWorldView] | None = None,
    reservations: ReservationBook | None = None,
    console_of: Callable[[str], str | None] | None = None,
) -> Iterator[None]:
    """moto, behaving like AWS where GPU Pilot depends on it, until the block ends."""
    patches = _Patches()
    try:
        if dispatcher is not None:
            run_handlers_in_process(patches, dispatcher)
        if on_job_submitted is not None:
            hand_jobs_to_simulator(patches, on_job_submitted)
        lifecycle = lifecycle or ComputeEnvironmentLifecycle()
        compute_environment_lifecycle(patches, lifecycle)
        if offerings is not None:
            world_offerings(patches, *offerings)
        for region, view in (regions or {}).items():
            world_offerings(patches, region, view.zones, view.offered)
        world_quotas(patches, quotas or {}, {region: view.quotas for region, view in (regions or {}).items()})
        paginated_list_jobs(patches)
        refuse_disabled_queues(patches)
        batch_deletions_and_limits(patches, lifecycle)
        name_clusters_as_batch_does(patches)
        keep_time_limit_actions(patches)
        report_exit_codes(patches)
        container_instance_states(patches)
        container_instance_health(patches)
        if console_of is not None:
            instance_consoles(patches, console_of)
        if spot_market is not None:
            world_spot_market(patches, spot_market, {region: view.spot for region, view in (regions or {}).items()})
        serve_price_list(patches)
        # Without a world's reservations EC2 still answers, as AWS does for an account that holds none.
        world_reservations(patches, reservations or ReservationBook.empty())
        direct_dynamodb_item_answers(patches)
        item_level_transactions(patches)
        pick_projected_attributes(patches)
        index_pages_of_index_entries(patches)
        parse_each_definition_once(patches)
        share_task_clients(patches)
        if workflow_clock is not None:
            workflow_time(patches, workflow_clock)
        yield
    finally:
        patches.undo()
