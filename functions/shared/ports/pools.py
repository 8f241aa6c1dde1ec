"""The ports of GPU Pilot's pools: Batch's compute environments and job queues, their fleets of EC2 and ECS
instances, and what is remembered of each pool between sweeps and workflows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from functions.shared.ports.hosts import HostActions

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.capacity.quotas import RunningInstances
    from functions.shared.domain.fleet.batch import (
        ComputeEnvironmentState,
        ContainerInstanceState,
        FleetState,
        JobQueueState,
    )
    from functions.shared.domain.pools.states import PoolState


class PoolStates(Protocol):
    """What the sweep remembers of each pool between sweeps (idle since, registration failures in a row)."""

    def pool_states(self) -> dict[str, PoolState]:
        """pool -> its state, in one read."""
        ...

    def save_pool_state(self, state: PoolState) -> bool:
        """Write its memory if nobody wrote that pool since it was read (its version); False when someone did."""
        ...

    def claim_pool(self, pool: str, key: str, at: str) -> bool:
        """Record that a workflow uses the pool now; False (nothing written) when its retirement has started."""
        ...

    def start_retiring(self, pool: str, reason: str, at: str, last_used_at: str | None) -> bool:
        """Mark it retiring, if nobody claimed it since `last_used_at` was read and no retirement started."""
        ...

    def finish_retiring(self, pool: str) -> None:
        """Forget a retired pool (both its queue and its compute environment are gone)."""
        ...

    def note_queue_verdict(self, pool: str, head: str, reason: str, at: str) -> None:
        """Remember Batch's verdict on the job heading the pool's queue (its Batch job id, Batch's words), for the
        jobs that join the queue after it was said."""
        ...

    def queue_verdict(self, pool: str) -> tuple[str, str] | None:
        """(the head's Batch job id, Batch's words) last remembered of the pool's queue, if any."""
        ...


class BatchPools(Protocol):
    """AWS Batch compute environments and job queues."""

    def describe_compute_environment(self, name: str) -> ComputeEnvironmentState | None: ...

    def generations(self, pool: str) -> tuple[list[ComputeEnvironmentState], list[JobQueueState]]:
        """Every compute environment and job queue Batch shows of the pool's generations, DELETING and DELETED
        ones included."""
        ...

    def compute_environments(self, prefix: str) -> list[ComputeEnvironmentState]: ...

    def job_queues(self, prefix: str) -> list[JobQueueState]:
        """The job queues GPU Pilot created (under the prefix)."""
        ...

    def create_compute_environment(self, spec: dict[str, Any]) -> None:
        """Create it; a pool created meanwhile by another workflow is not an error."""
        ...

    def job_queue(self, name: str) -> JobQueueState | None:
        """The queue, or None when it does not exist."""
        ...

    def create_job_queue(self, spec: dict[str, Any]) -> None:
        """Create it; a queue created meanwhile by another workflow is not an error."""
        ...

    def disable_job_queue(self, name: str) -> None:
        """Stop the queue taking new jobs (jobs already in it can still finish)."""
        ...

    def counts(self) -> tuple[int, int]:
        """How many compute environments and job queues the region has (everyone's: Batch's limits are)."""
        ...

    def queue_has_jobs(self, name: str) -> bool:
        """Whether any job is still in the queue (SUBMITTED to RUNNING): deleting it would terminate them."""
        ...

    def delete_job_queue(self, name: str) -> bool:
        """Ask Batch to delete a DISABLED queue; False when Batch refuses it in its current state."""
        ...

    def disable_compute_environment(self, name: str) -> bool: ...

    def delete_compute_environment(self, name: str) -> bool:
        """Ask Batch to delete a DISABLED compute environment no queue orders; False when Batch refuses."""
        ...


class Fleet(HostActions, Protocol):
    """A pool's EC2 instances (by the pool tag) and its ECS cluster's container instances."""

    def fleets(self, pools: dict[str, str | None]) -> dict[str, FleetState]:
        """pool -> its fleet (pools given with their cluster ARN, None when there is none yet)."""
        ...

    def running_instances(self, spot: bool) -> list[RunningInstances]:
        """The account's pending and running instances (spot ones, or on-demand ones), by type and GPU Pilot pool."""
        ...

    def deregister_container_instance(self, cluster_arn: str, container_instance_arn: str) -> None: ...

    def zone_of(self, container_instance_arn: str) -> str | None:
        """The zone of a container instance (ECS's ecs.availability-zone), None when ECS no longer knows it."""
        ...

    def container_instance(self, container_instance_arn: str) -> ContainerInstanceState | None:
        """A container instance as ECS describes it (its EC2 instance, zone, registration), None when ECS no
        longer knows it."""
        ...
