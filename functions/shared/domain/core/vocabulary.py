"""One word per thing (docs/glossary.md): the enums every layer, the API and the metrics share."""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    """Where a GPU Pilot job is; only moves forward (see lifecycle.status_rank)."""

    SUBMITTED = "SUBMITTED"
    SELECTING = "SELECTING"
    PROVISIONING = "PROVISIONING"
    RUNNABLE = "RUNNABLE"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class BatchStatus(StrEnum):
    """An AWS Batch job's status, as Batch reports it."""

    SUBMITTED = "SUBMITTED"
    PENDING = "PENDING"
    RUNNABLE = "RUNNABLE"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @property
    def started(self) -> bool:
        return self in (BatchStatus.STARTING, BatchStatus.RUNNING, BatchStatus.SUCCEEDED, BatchStatus.FAILED)

    @property
    def ended(self) -> bool:
        return self in (BatchStatus.SUCCEEDED, BatchStatus.FAILED)


class AttemptStatus(StrEnum):
    """An attempt's own status: Batch's, or why no Batch job ran."""

    SUBMITTED = "SUBMITTED"
    PENDING = "PENDING"
    RUNNABLE = "RUNNABLE"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    # The pool could not take a job (its compute environment is INVALID): nothing was submitted.
    NOT_SUBMITTED = "NOT_SUBMITTED"


class CapacityType(StrEnum):
    """How EC2 sells the instance: on-demand or spot."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"


class BilledCapacity(StrEnum):
    """How an attempt is billed (a cost's `capacity_type`): a capacity type, or the reserved capacity it ran in, an
    On-Demand Capacity Reservation (`reserved`) or a Capacity Block (`capacity-block`), paid for whether used or not."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVED = "reserved"
    CAPACITY_BLOCK = "capacity-block"


class CapacityPreference(StrEnum):
    """What a request asks for: one capacity type, spot then on-demand, or capacity the account already reserved."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    SPOT_FIRST = "spot-first"
    # Any Capacity Reservation or Capacity Block of the account that fits the request (on-demand instances in it).
    RESERVED = "reserved"


class MarketSignal(StrEnum):
    """What selection reads about an offering now; one that cannot be read degrades the plan, never fails it."""

    ON_DEMAND_PRICES = "on-demand prices"
    RESERVATIONS = "capacity reservations"
    SPOT_PRICES = "spot prices"
    PLACEMENT_SCORES = "spot placement scores"
    VCPU_QUOTAS = "vCPU quotas"


class Arch(StrEnum):
    X86_64 = "x86_64"
    ARM64 = "arm64"


class DiagnosisCategory(StrEnum):
    """Why a job waits (a diagnosis), or what is wrong with the fleet (a finding): one vocabulary."""

    INSUFFICIENT_CAPACITY = "INSUFFICIENT_CAPACITY"
    NOT_OFFERED = "NOT_OFFERED"
    ECS_AGENT_NOT_REGISTERED = "ECS_AGENT_NOT_REGISTERED"
    GPU_NOT_REGISTERED = "GPU_NOT_REGISTERED"
    AGENT_DISCONNECTED = "AGENT_DISCONNECTED"
    COMPUTE_ENVIRONMENT_INVALID = "COMPUTE_ENVIRONMENT_INVALID"
    MAX_VCPUS_REACHED = "MAX_VCPUS_REACHED"
    JOB_TOO_LARGE = "JOB_TOO_LARGE"
    NO_INSTANCES_LAUNCHED = "NO_INSTANCES_LAUNCHED"
    SERVICE_ROLE_PERMISSIONS = "SERVICE_ROLE_PERMISSIONS"
    WAITING_FOR_SCALE_UP = "WAITING_FOR_SCALE_UP"
    UNDETERMINED = "UNDETERMINED"
    # The pool's job queue takes no new jobs: the sweep disabled it (its instances kept failing to register
    # with ECS) or an operator did. A diagnosis of a job that would go there, and a finding while it lasts.
    POOL_DISABLED = "POOL_DISABLED"
    # A finding only: a pool with no live job (its idle instances, if any, cost money without serving one).
    IDLE_POOL = "IDLE_POOL"
    # A diagnosis: the pool the job needs cannot be created under Batch's 50 compute environments and 50 job
    # queues per region, and no pool of GPU Pilot's is idle enough to retire for it (the workflow falls back).
    POOL_LIMIT = "POOL_LIMIT"
    # A diagnosis: the pool the job needs was not ready (compute environment and job queue VALID) by the attempt's
    # provisioning deadline: Batch still creating it, or room under its limits still being made (the workflow
    # falls back).
    POOL_NOT_READY = "POOL_NOT_READY"
    # A finding only: a pool being retired (outdated spec, idle, INVALID, or to make room), one step per sweep.
    POOL_RETIRING = "POOL_RETIRING"
    # A finding only: one GPU host that fails jobs for reasons of its own (its GPU, driver or container runtime),
    # failed its boot-time GPU check, or registered without its GPUs; the sweep quarantines it.
    BAD_GPU_HOST = "BAD_GPU_HOST"
    # A finding only: too large a share of a pool's hosts is bad at once for the hosts to be the cause (the AMI, the
    # driver or the launch template is more likely): none is quarantined.
    POOL_UNHEALTHY = "POOL_UNHEALTHY"
    # A diagnosis: the account's EC2 vCPU quota for the pool's instance family is held by running instances (other
    # jobs', other pools', anyone's), so Batch cannot launch an instance for the job until some end (a normal
    # scale-up otherwise); the evidence names the quota, what holds it, and how to raise it. Time cures it.
    VCPU_QUOTA_REACHED = "VCPU_QUOTA_REACHED"
    # A diagnosis: the job's next candidate is a Capacity Block (or a future-dated reservation) that has not begun; the
    # workflow waits until it does, then provisions its pool (normal, like WAITING_FOR_SCALE_UP).
    WAITING_FOR_RESERVATION = "WAITING_FOR_RESERVATION"
    # A finding only: a capacity region other than the home one that the sweep could not read (its stack not deployed,
    # the region not enabled for the account, a grant missing, its endpoint unreachable); the others were swept.
    REGION_UNREACHABLE = "REGION_UNREACHABLE"
    # A diagnosis: the job's team holds every GPU its max_gpus allows (AWS Batch holds the job RUNNABLE on the team's
    # consumable resource); it starts when the team's GPUs free up. Another GPU type would meet the same cap.
    TEAM_GPU_CAP = "TEAM_GPU_CAP"
    # A finding only: a running job whose GPUs idled past its idle_policy with action `warn` (the host agent's
    # report); the job runs on, its attempt's `warning` says so, the finding says what the idle time cost.
    GPU_IDLE = "GPU_IDLE"


# A finding's kind is a diagnosis category: the sweep and the workflow speak the same words.
FindingKind = DiagnosisCategory


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class Remedy(StrEnum):
    """What the workflow does after a diagnosis."""

    FALL_BACK = "fall_back"
    KEEP_WAITING = "keep_waiting"
    GIVE_UP = "give_up"


class NextStep(StrEnum):
    """What the workflow does when a job's start wait ends without the job starting."""

    FALL_BACK = "fall_back"
    GIVE_UP = "give_up"
    # The cause is not known to be one another GPU type cures yet: the workflow diagnoses it then.
    DIAGNOSE = "diagnose"


class WaitPhase(StrEnum):
    """What a parked workflow waits for: its attempt to start, or to end."""

    START = "start"
    FINISH = "finish"


class SweepStatus(StrEnum):
    RUNNING = "RUNNING"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class MetricName(StrEnum):
    """Every custom metric GPU Pilot emits (namespace GpuPilot, dimension service); alarms name these."""

    JOB_COST_USD = "JobCostUsd"
    JOB_RUNTIME_SECONDS = "JobRuntimeSeconds"
    JOBS_SUCCEEDED = "JobsSucceeded"
    JOBS_FAILED = "JobsFailed"
    STUCK_JOB_DIAGNOSES = "StuckJobDiagnoses"
    FALLBACKS = "Fallbacks"
    STUCK_JOBS = "StuckJobs"
    INVALID_COMPUTE_ENVIRONMENTS = "InvalidComputeEnvironments"
    RECONCILED_EVENTS = "ReconciledEvents"
    UNREGISTERED_INSTANCES = "UnregisteredInstances"
    GPU_LESS_INSTANCES = "GpuLessInstances"
    DISCONNECTED_AGENTS = "DisconnectedAgents"
    REMEDIATIONS = "RemediationActions"
    DISABLED_POOLS = "DisabledPools"
    IDLE_POOLS = "IdlePools"
    RETIRING_POOLS = "RetiringPools"
    IDLE_INSTANCES = "IdleInstances"
    WASTE_USD = "WasteUsd"
    QUARANTINED_HOSTS = "QuarantinedHosts"
    UNHEALTHY_POOLS = "UnhealthyPools"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 instance`, `2 instances`: a count and its noun in the number it takes (never `instance(s)`)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


class Role(StrEnum):
    """What a caller may do (teams): an admin everything, a member its team's jobs, a viewer read its team's."""

    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"


class Action(StrEnum):
    """What a caller asks of the API, as roles are granted it and the audit log names it."""

    SUBMIT = "submit"
    PLAN = "plan"
    READ = "read"
    LOGS = "logs"
    CANCEL = "cancel"
    COSTS = "costs"
    TEAMS = "teams"
    HEALTH = "health"
    SWEEP = "sweep"
    RESERVATIONS = "reservations"
    PURCHASE = "purchase"
    AUDIT = "audit"
    WHOAMI = "whoami"


class AuditOutcome(StrEnum):
    """How an audited action ended: done, refused for the caller's role or team, or for its team's budget."""

    ALLOWED = "allowed"
    FORBIDDEN = "forbidden"
    BUDGET_EXCEEDED = "budget_exceeded"
