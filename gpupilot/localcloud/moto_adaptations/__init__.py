"""Every adaptation of moto the local cloud needs, one module per AWS service, applied and undone by
`adapted_moto`.

moto is more forgiving than AWS and simpler than a GPU fleet; where GPU Pilot depends on AWS's behaviour,
the local cloud makes moto behave like AWS:

1. Lambda: awslambda.py
2. Batch jobs: batch_jobs.py
3. Batch compute environments: batch_environments.py
4. Batch job queues: batch_environments.py
5. EC2 offerings: ec2.py
6. Service Quotas: servicequotas.py
7. Batch ListJobs: batch_jobs.py
8. Batch SubmitJob: batch_jobs.py
9. Batch job queues' jobStateTimeLimitActions: batch_jobs.py
10. EC2's spot market: ec2.py
11. The AWS Price List API: pricing.py
12. Batch deletions and limits: batch_deletions.py
13. Speed, answers unchanged: dynamodb.py and stepfunctions.py and ec2_images.py
14. Batch DescribeJobs: batch_jobs.py
15. Batch's ECS clusters: ecs.py
16. Simulated time in the workflow: stepfunctions.py
17. EC2 GetConsoleOutput: ec2.py
18. ECS UpdateContainerInstancesState: ecs.py
19. ECS DescribeContainerInstances `include=CONTAINER_INSTANCE_HEALTH`: ecs.py
20. EC2's reserved capacity: ec2_reservations.py
21. Capacity regions: regions.py
22. DynamoDB index pages: dynamodb.py
23. EC2 DescribeLaunchTemplateVersions: ec2.py
24. EC2 DescribeInstanceTypes per region: ec2.py
25. DynamoDB writes, one at a time: dynamodb.py
26. Batch consumable resources: batch_consumables.py
27. EC2 DescribeInstances' instance-lifecycle filter: ec2.py
28. Batch fair-share queues: batch_shares.py

Each module's docstring says what its adaptations do and the AWS documentation they follow; patches.py holds the
replacements' machinery.
tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gpupilot.localcloud.dispatch import HandlerDispatcher
from gpupilot.localcloud.moto_adaptations.awslambda import run_handlers_in_process
from gpupilot.localcloud.moto_adaptations.batch_consumables import ConsumableBook, consumable_resources
from gpupilot.localcloud.moto_adaptations.batch_deletions import batch_deletions_and_limits
from gpupilot.localcloud.moto_adaptations.batch_environments import (
    ComputeEnvironmentLifecycle,
    compute_environment_lifecycle,
)
from gpupilot.localcloud.moto_adaptations.batch_jobs import (
    hand_jobs_to_simulator,
    keep_time_limit_actions,
    paginated_list_jobs,
    refuse_disabled_queues,
    report_exit_codes,
)
from gpupilot.localcloud.moto_adaptations.batch_shares import fair_share_queues
from gpupilot.localcloud.moto_adaptations.dynamodb import (
    direct_dynamodb_item_answers,
    index_pages_of_index_entries,
    item_level_transactions,
    one_write_at_a_time,
    pick_projected_attributes,
    size_items_once,
)
from gpupilot.localcloud.moto_adaptations.ec2 import (
    SpotMarket,
    instance_consoles,
    instance_lifecycle_filter,
    launch_template_response_fields,
    regional_instance_types,
    world_offerings,
    world_spot_market,
)
from gpupilot.localcloud.moto_adaptations.ec2_images import images_when_first_read
from gpupilot.localcloud.moto_adaptations.ec2_reservations import world_reservations
from gpupilot.localcloud.moto_adaptations.ecs import (
    container_instance_health,
    container_instance_states,
    name_clusters_as_batch_does,
)
from gpupilot.localcloud.moto_adaptations.patches import Patches
from gpupilot.localcloud.moto_adaptations.pricing import serve_price_list
from gpupilot.localcloud.moto_adaptations.regions import RegionWorldView
from gpupilot.localcloud.moto_adaptations.servicequotas import world_quotas
from gpupilot.localcloud.moto_adaptations.stepfunctions import (
    WorkflowClock,
    parse_each_definition_once,
    share_task_clients,
    workflow_time,
)
from gpupilot.localcloud.reservations import ReservationBook

__all__ = [
    "ComputeEnvironmentLifecycle",
    "ConsumableBook",
    "RegionWorldView",
    "SpotMarket",
    "WorkflowClock",
    "adapted_moto",
]


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
    unsold: Mapping[str, set[str]] | None = None,
    consumables: ConsumableBook | None = None,
) -> Iterator[None]:
    """moto, behaving like AWS where GPU Pilot depends on it, until the block ends."""
    patches = Patches()
    try:
        if dispatcher is not None:
            run_handlers_in_process(patches, dispatcher)
        if on_job_submitted is not None:
            hand_jobs_to_simulator(patches, on_job_submitted)
        lifecycle = lifecycle or ComputeEnvironmentLifecycle()
        compute_environment_lifecycle(patches, lifecycle)
        if offerings is not None:
            world_offerings(patches, *offerings)
        images_when_first_read(patches)
        regional_instance_types(patches, unsold or {})
        launch_template_response_fields(patches)
        instance_lifecycle_filter(patches)
        for region, view in (regions or {}).items():
            world_offerings(patches, region, view.zones, view.offered)
        world_quotas(patches, quotas or {}, {region: view.quotas for region, view in (regions or {}).items()})
        paginated_list_jobs(patches)
        # Without a book of its own (an integration test's cloud), Batch still keeps the stack's resources.
        consumable_resources(patches, consumables or ConsumableBook())
        refuse_disabled_queues(patches)
        batch_deletions_and_limits(patches, lifecycle)
        name_clusters_as_batch_does(patches)
        keep_time_limit_actions(patches)
        fair_share_queues(patches)
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
        size_items_once(patches)
        item_level_transactions(patches)
        # After the transactions' own adaptation: the lock holds a transaction's restore too.
        one_write_at_a_time(patches)
        pick_projected_attributes(patches)
        index_pages_of_index_entries(patches)
        parse_each_definition_once(patches)
        share_task_clients(patches)
        if workflow_clock is not None:
            workflow_time(patches, workflow_clock)
        yield
    finally:
        patches.undo()
