"""The local cloud's GPU fleet on moto's own Batch, EC2 and ECS, ticked by hand on its timeline clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.fleet.batch import SMOKE_NAME
from functions.shared.domain.jobs.definitions import RETRY_STRATEGY, retry_strategy
from functions.shared.domain.pools.specs import POOL_TAG
from functions.shared.domain.requests.job_request import JobRequest
from gpupilot.localcloud.clock import LocalClock
from gpupilot.localcloud.fleet import FleetSimulator, Timeline
from gpupilot.localcloud.moto_adaptations import ComputeEnvironmentLifecycle, adapted_moto
from gpupilot.localcloud.world import World
from tests.integration.conftest import MOTO_CONFIG

REGION = "us-east-1"
DAY = 86400
POOL = "gpupilot-od-x8664-g4dn-xlarge"
TIMELINE = Timeline(start_delay=0.1, boot=1.0, disconnect_after=0.5, idle=5.0)


class Fleet:
    """A pool (compute environment + queue) of g4dn.xlarge and a simulator over it, ticked by hand on its clock."""

    def __init__(self, world: World, speedup: float = 1.0) -> None:
        self.events: list[dict[str, Any]] = []
        self.clock = LocalClock()
        self.simulator = FleetSimulator(
            world, self.events.append, "123456789012", timeline=TIMELINE, clock=self.clock, speedup=speedup
        )
        self.batch = boto3.client("batch", region_name=REGION)
        self.ec2 = boto3.client("ec2", region_name=REGION)
        self.ecs = boto3.client("ecs", region_name=REGION)
        self.t0 = self.clock.monotonic()

    def create_pool(self, spot: bool = False, launch_template: str | None = None) -> None:
        vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = self.ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24", AvailabilityZone="us-east-1a")
        group = self.ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)["GroupId"]
        iam = boto3.client("iam", region_name=REGION)
        iam.create_role(RoleName="instance", AssumeRolePolicyDocument="{}")
        profile = iam.create_instance_profile(InstanceProfileName="instance")["InstanceProfile"]["Arn"]
        arn = self.batch.create_compute_environment(
            computeEnvironmentName=POOL,
            type="MANAGED",
            computeResources={
                "type": "SPOT" if spot else "EC2",
                "minvCpus": 0,
                "maxvCpus": 64,
                "instanceTypes": ["g4dn.xlarge"],
                "subnets": [subnet["Subnet"]["SubnetId"]],
                "securityGroupIds": [group],
                "instanceRole": profile,
                "tags": {POOL_TAG: POOL},
                **(
                    {"launchTemplate": {"launchTemplateName": launch_template, "version": "1"}}
                    if launch_template
                    else {}
                ),
            },
        )["computeEnvironmentArn"]
        self.batch.create_job_queue(
            jobQueueName=POOL,
            state="ENABLED",
            priority=1,
            computeEnvironmentOrder=[{"order": 1, "computeEnvironment": arn}],
        )

    def submit(self, gpus: int = 1, retry: dict[str, Any] | None = None, name: str = "train", **container: Any) -> str:
        # GPU Pilot's jobs carry its retry strategy unless a test gives another ({}: Batch's default, one attempt).
        strategy = RETRY_STRATEGY if retry is None else retry
        definition = self.batch.register_job_definition(
            jobDefinitionName=f"gpupilot-{name}",
            type="container",
            containerProperties=container
            | {
                "image": "nvidia/cuda",
                "resourceRequirements": [
                    {"type": "GPU", "value": str(gpus)},
                    {"type": "VCPU", "value": "4"},
                    {"type": "MEMORY", "value": "8192"},
                ],
            },
            **({"retryStrategy": strategy} if strategy else {}),
        )["jobDefinitionArn"]
        job_id = str(self.batch.submit_job(jobName=name, jobQueue=POOL, jobDefinition=definition)["jobId"])
        self.t0 = self.clock.monotonic()  # the timeline starts with the submission
        return job_id

    def emitted(self) -> list[dict[str, Any]]:
        """The events queued for the delivery thread (not started in these tests)."""
        return [e for e in list(self.simulator._events.queue) if e]

    def at(self, seconds: float) -> None:
        """Tick the fleet as it stands `seconds` after the submission."""
        self.simulator.tick(self.t0 + seconds)

    def job(self, job_id: str) -> dict[str, Any]:
        return dict(self.batch.describe_jobs(jobs=[job_id])["jobs"][0])

    def instances(self) -> list[dict[str, Any]]:
        reservations = self.ec2.describe_instances(Filters=[{"Name": f"tag:{POOL_TAG}", "Values": [POOL]}])
        return [i for r in reservations["Reservations"] for i in r["Instances"]]

    def container_instances(self) -> list[dict[str, Any]]:
        cluster = self.batch.describe_compute_environments(computeEnvironments=[POOL])["computeEnvironments"][0][
            "ecsClusterArn"
        ]
        arns = self.ecs.list_container_instances(cluster=cluster)["containerInstanceArns"]
        if not arns:
            return []
        return list(
            self.ecs.describe_container_instances(cluster=cluster, containerInstances=arns)["containerInstances"]
        )


@pytest.fixture
def fleet_in(request: pytest.FixtureRequest) -> Iterator[Any]:
    """fleet_in(world_dict) -> a Fleet whose pool exists, on moto adapted as the local cloud adapts it."""
    with mock_aws(config=MOTO_CONFIG):
        stack = []

        def make(world: dict[str, Any] | None = None, spot: bool = False, speedup: float = 1.0) -> Fleet:
            fleet = Fleet(World.model_validate(world or {}), speedup)
            context = adapted_moto(
                on_job_submitted=fleet.simulator.submit,
                lifecycle=ComputeEnvironmentLifecycle(create_seconds=0),
                quotas=(world or {}).get("quotas"),
                console_of=fleet.simulator.console,
            )
            context.__enter__()
            stack.append(context)
            fleet.create_pool(spot)
            return fleet

        yield make
        for context in reversed(stack):
            context.__exit__(None, None, None)


def test_a_gpu_job_launches_a_tagged_instance_that_registers_its_gpu_runs_and_scales_in(fleet_in) -> None:
    fleet = fleet_in({"jobs": {"runtime_seconds": 2}})
    job_id = fleet.submit()
    # RUNNABLE, then an instance of the pool's type launches, tagged as Batch tags it
    fleet.at(0.2)
    [instance] = fleet.instances()
    assert fleet.job(job_id)["status"] == "RUNNABLE"
    assert instance["InstanceType"] == "g4dn.xlarge"
    assert {"Key": POOL_TAG, "Value": POOL} in instance["Tags"]
    # After its boot it registers with its GPU, and the job is placed on it
    fleet.at(1.3)
    [registered] = fleet.container_instances()
    assert registered["ec2InstanceId"] == instance["InstanceId"] and registered["agentConnected"] is True
    assert [len(r["stringSetValue"]) for r in registered["registeredResources"] if r["name"] == "GPU"] == [1]
    assert fleet.job(job_id)["status"] == "STARTING"
    fleet.at(1.4)
    assert fleet.job(job_id)["status"] == "RUNNING"
    # It ends after its runtime, and the idle instance is terminated after the idle period
    fleet.at(3.5)
    assert fleet.job(job_id)["status"] == "SUCCEEDED"
    fleet.at(9.0)
    assert fleet.instances()[0]["State"]["Name"] == "terminated"
    # And each change was emitted as Batch emits it (queued for the delivery thread, not started here)
    emitted = [e["detail"]["status"] for e in list(fleet.simulator._events.queue) if e]
    assert emitted == ["RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED"]


def test_a_job_gets_its_log_stream_at_running_and_the_simulator_writes_what_it_did_there_marked_simulated(
    fleet_in,
) -> None:
    # Given a job whose definition sends its output to Batch's log group under a stream prefix
    fleet = fleet_in({"jobs": {"runtime_seconds": 2, "exit_code": 3}})
    options = {"awslogs-stream-prefix": "gpupilot"}
    job_id = fleet.submit(command=["python", "train.py"], logConfiguration={"logDriver": "awslogs", "options": options})
    logs = boto3.client("logs", region_name=REGION)

    # When an instance launches for it, it is placed (STARTING), then runs, then ends
    fleet.at(0.2)
    fleet.at(1.3)
    starting = fleet.job(job_id)
    fleet.at(1.4)
    running = fleet.job(job_id)
    fleet.at(3.5)

    # Then its stream is named only at RUNNING, as Batch names it, in the job and its attempt
    assert (starting["status"], running["status"]) == ("STARTING", "RUNNING")
    assert "logStreamName" not in starting["container"]
    stream = running["container"]["logStreamName"]
    assert stream.startswith("gpupilot/default/")
    assert fleet.job(job_id)["attempts"][-1]["container"]["logStreamName"] == stream
    # And what the simulator did is in that stream, every line marked as simulated, never as the program's output
    lines = [e["message"] for e in logs.get_log_events(logGroupName="/aws/batch/job", logStreamName=stream,
                                                         startFromHead=True)["events"]]  # fmt: skip
    assert all(line.startswith("[gpupilot local cloud: simulated, no container ran]") for line in lines)
    said = "\n".join(lines)
    assert "image nvidia/cuda" in said and "command python train.py" in said and "exit code 3" in said


def test_an_instance_whose_agent_never_registers_runs_while_the_job_waits_without_a_reason(fleet_in) -> None:
    fleet = fleet_in({"instance_types": {"g4dn.xlarge": {"ecs_agent": "never_registers"}}})
    job_id = fleet.submit()
    for second in (0.2, 2.0, 10.0):
        fleet.at(second)
    assert [i["State"]["Name"] for i in fleet.instances()] == ["running"]
    assert fleet.container_instances() == []
    job = fleet.job(job_id)
    assert job["status"] == "RUNNABLE" and "statusReason" not in job


def test_an_instance_terminated_through_ec2_is_replaced_for_the_job_still_waiting(fleet_in) -> None:
    # Given a job waiting on an instance whose agent never registers
    fleet = fleet_in({"instance_types": {"g4dn.xlarge": {"ecs_agent": "never_registers"}}})
    job_id = fleet.submit()
    fleet.at(0.2)
    [first] = fleet.instances()
    # When someone terminates it through EC2 (the sweep's remediation, an operator)
    fleet.ec2.terminate_instances(InstanceIds=[first["InstanceId"]])
    fleet.at(2.0)
    fleet.at(2.2)
    # Then Batch launches another for the job, which still waits
    states = {i["InstanceId"]: i["State"]["Name"] for i in fleet.instances()}
    assert states.pop(first["InstanceId"]) == "terminated"
    assert list(states.values()) == ["running"]
    assert fleet.job(job_id)["status"] == "RUNNABLE"


def test_an_instance_without_gpu_support_registers_without_gpus_and_the_job_waits(fleet_in) -> None:
    fleet = fleet_in({"instance_types": {"g4dn.xlarge": {"gpu_registration": "missing"}}})
    job_id = fleet.submit()
    for second in (0.2, 2.0, 4.0):
        fleet.at(second)
    [registered] = fleet.container_instances()
    assert not [r for r in registered["registeredResources"] if r["name"] == "GPU"]
    assert fleet.job(job_id)["status"] == "RUNNABLE"


def test_an_agent_that_disconnects_before_placement_leaves_the_job_waiting(fleet_in) -> None:
    fleet = fleet_in({"instance_types": {"g4dn.xlarge": {"ecs_agent": "disconnects"}}})
    job_id = fleet.submit()
    for second in (0.2, 1.2, 2.0):
        fleet.at(second)
    [registered] = fleet.container_instances()
    assert registered["agentConnected"] is False
    assert fleet.job(job_id)["status"] == "RUNNABLE"


def test_no_capacity_keeps_the_job_runnable_with_batchs_own_reason_and_launches_nothing(fleet_in) -> None:
    fleet = fleet_in({"instance_types": {"g4dn.xlarge": {"capacity": "none"}}})
    job_id = fleet.submit()
    fleet.at(0.2)
    fleet.at(0.3)
    assert fleet.instances() == []
    assert fleet.job(job_id)["statusReason"].startswith("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")


def test_a_vcpu_quota_of_zero_launches_nothing_and_batch_gives_no_reason(fleet_in) -> None:
    fleet = fleet_in({"quotas": {"L-DB2E81BA": 0}})
    job_id = fleet.submit()
    for second in (0.2, 2.0):
        fleet.at(second)
    assert fleet.instances() == []
    assert "statusReason" not in fleet.job(job_id)


def test_a_job_larger_than_any_instance_type_gets_batchs_resource_requirement_reason(fleet_in) -> None:
    fleet = fleet_in()
    job_id = fleet.submit(gpus=8)
    fleet.at(0.2)
    fleet.at(0.3)
    assert fleet.job(job_id)["statusReason"].startswith("MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT")


RETRY_ON_HOST = {"attempts": 3, "evaluateOnExit": [{"onStatusReason": "Host EC2*", "action": "RETRY"}]}
EXIT_ON_HOST = {"attempts": 3, "evaluateOnExit": [{"onStatusReason": "Host EC2*", "action": "EXIT"}]}


def reclaimed_fleet(fleet_in: Any, retry: dict[str, Any]) -> tuple[Fleet, str, str]:
    """A spot job RUNNING on an instance EC2 reclaims 2 s after its launch, ticked past the reclaim."""
    fleet = fleet_in(
        {"spot": {"g4dn.xlarge": {"interrupt_after_seconds": 2}}, "jobs": {"runtime_seconds": 30}}, spot=True
    )
    job_id = fleet.submit(retry=retry)
    for second in (0.2, 1.3, 1.4):
        fleet.at(second)
    [first] = fleet.instances()
    assert fleet.simulator.instances()[0].spot is True  # moto's DescribeInstances does not show InstanceLifecycle
    assert fleet.job(job_id)["status"] == "RUNNING"
    fleet.at(2.5)
    return fleet, job_id, first["InstanceId"]


def test_a_reclaimed_spot_instance_fails_its_jobs_attempt_as_batch_reports_it_and_the_job_is_retried(fleet_in) -> None:
    # Given a job whose definition retries host terminations / When EC2 reclaims its instance
    fleet, job_id, instance_id = reclaimed_fleet(fleet_in, RETRY_ON_HOST)
    # Then the attempt fails with the host-termination reason, and the job is RUNNABLE again
    job = fleet.job(job_id)
    assert job["status"] == "RUNNABLE"
    assert job["attempts"][-1]["statusReason"] == f"Host EC2 (instance {instance_id}) terminated."
    assert [i["State"]["Name"] for i in fleet.instances() if i["InstanceId"] == instance_id] == ["terminated"]


def test_a_reclaim_that_the_job_definition_exits_on_fails_the_job_with_batchs_words(fleet_in) -> None:
    # Given a job whose definition exits on a host termination / When EC2 reclaims its instance
    fleet, job_id, instance_id = reclaimed_fleet(fleet_in, EXIT_ON_HOST)
    # Then the job FAILED, its one attempt ended with the host's termination
    job = fleet.job(job_id)
    assert job["status"] == "FAILED"
    assert [a["statusReason"] for a in job["attempts"]] == [f"Host EC2 (instance {instance_id}) terminated."]


def test_a_spot_reclaim_is_simulated_time_that_the_speedup_shortens_as_it_does_a_runtime(fleet_in) -> None:
    # Given instances EC2 reclaims 120 simulated seconds after their launch, at a speedup of 60
    fleet = fleet_in(
        {"spot": {"g4dn.xlarge": {"interrupt_after_seconds": 120}}, "jobs": {"runtime_seconds": 600}},
        spot=True,
        speedup=60,
    )
    job_id = fleet.submit(retry=RETRY_ON_HOST)
    for second in (0.2, 1.3, 1.4):
        fleet.at(second)
    [instance] = fleet.instances()
    assert fleet.job(job_id)["status"] == "RUNNING"
    # When the clock stands 2.5 s after the submission (the instance launched at 0.2 s: 2.3 s, 138 simulated)
    fleet.at(2.5)
    # Then EC2 has reclaimed it, as 120 simulated seconds are 2 of the clock
    assert (
        fleet.job(job_id)["attempts"][-1]["statusReason"] == f"Host EC2 (instance {instance['InstanceId']}) terminated."
    )


def test_a_job_definition_without_a_retry_strategy_is_not_retried_after_a_reclaim(fleet_in) -> None:
    fleet, job_id, _ = reclaimed_fleet(fleet_in, {})
    assert fleet.job(job_id)["status"] == "FAILED"


def test_batchs_reason_for_a_blocked_queue_comes_in_one_queue_blocked_event_for_the_job_at_its_head(fleet_in) -> None:
    # Given two jobs in a queue whose only type has no capacity
    fleet = fleet_in({"instance_types": {"g4dn.xlarge": {"capacity": "none"}}})
    first = fleet.submit(name="first")
    second = fleet.submit(name="second")
    for second_after in (0.2, 0.3, 0.4):
        fleet.at(second_after)

    # Then the job at the head of the queue shows Batch's reason when described, the job behind it none (AWS says it of
    # the head alone), no state change event says it, and one queue-blocked event (of the head, as DescribeJobs shows
    # it) does
    assert fleet.job(first)["statusReason"].startswith("CAPACITY:INSUFFICIENT")
    assert not fleet.job(second).get("statusReason")
    blocked = [e for e in fleet.emitted() if e["detail-type"] == "Batch Job Queue Blocked"]
    changes = [e for e in fleet.emitted() if e["detail-type"] == "Batch Job State Change"]
    assert [e["detail"]["jobId"] for e in blocked] == [first]
    assert blocked[0]["detail"]["statusReason"].startswith("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")
    assert blocked[0]["resources"][1].endswith(f":job-queue/{POOL}")
    assert all("statusReason" not in e["detail"] for e in changes)

    # When the head job leaves the queue (cancelled, as a fallback does)
    fleet.batch.terminate_job(jobId=first, reason="GPU Pilot fell back: INSUFFICIENT_CAPACITY")
    for second_after in (0.5, 0.6):
        fleet.at(second_after)

    # Then the job now at the head gets Batch's reason and its queue-blocked event
    blocked = [e for e in fleet.emitted() if e["detail-type"] == "Batch Job Queue Blocked"]
    assert [e["detail"]["jobId"] for e in blocked] == [first, second]
    assert fleet.job(second)["statusReason"].startswith("CAPACITY:INSUFFICIENT")


def test_a_pool_whose_launch_template_targets_a_capacity_block_runs_in_it_until_ec2_takes_it_back(fleet_in) -> None:
    from gpupilot.localcloud.reservations import ReservationBook

    # Given a one-hour Capacity Block of one g4dn.xlarge in us-east-1a, begun (while g4dn.xlarge has no on-demand
    # capacity), and a pool whose launch template targets it
    world = World.model_validate(
        {"instance_types": {"g4dn.xlarge": {"capacity": "none"}}, "jobs": {"runtime_seconds": 7200},
         "capacity_reservations": [{"instance_type": "g4dn.xlarge", "zone": "us-east-1a", "count": 1, "hours": 1,
                                    "capacity_block": True}]}
    )  # fmt: skip
    clock = [1_000_000.0]
    book = ReservationBook(world, clock=lambda: clock[0])
    [block] = book.reservations
    fleet = Fleet(world)
    fleet.simulator.reservations = book
    with adapted_moto(on_job_submitted=fleet.simulator.submit, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0),
                      reservations=book):  # fmt: skip
        fleet.ec2.create_launch_template(
            LaunchTemplateName="in-block",
            LaunchTemplateData={"InstanceMarketOptions": {"MarketType": "capacity-block"},
                                "CapacityReservationSpecification": {"CapacityReservationTarget": {
                                    "CapacityReservationId": block}}},
        )  # fmt: skip
        fleet.create_pool(launch_template="in-block")
        job_id = fleet.submit()

        # When the job runs, then the clock reaches 30 minutes before the block's end
        fleet.at(0.2)
        fleet.at(1.3)
        fleet.at(1.4)
        [instance] = fleet.instances()
        running = fleet.job(job_id)["status"]
        held = fleet.ec2.describe_capacity_reservations()["CapacityReservations"][0]
        clock[0] += 1800
        fleet.at(1.5)
        job = fleet.job(job_id)

    # Then its instance ran in the block (as EC2 shows it, the block's room taken) despite the on-demand shortage
    assert running == "RUNNING"
    assert instance["CapacityReservationId"] == block
    assert held["AvailableInstanceCount"] == 0
    # And EC2 took the instance back 30 minutes before the block's end: the attempt ended as Batch reports it
    assert [i["State"]["Name"] for i in fleet.instances()] == ["terminated"]
    assert job["attempts"][-1]["statusReason"] == f"Host EC2 (instance {instance['InstanceId']}) terminated."


# -- bad GPU hosts ---------------------------------------------------------------------------------------------------
def bad(symptom: str, share: float = 1.0) -> dict[str, Any]:
    return {"instance_types": {"g4dn.xlarge": {"bad_hosts": {"share": share, "symptom": symptom}}},
            "jobs": {"runtime_seconds": 30}}  # fmt: skip


def console(fleet: Fleet, instance_id: str) -> str:
    return str(fleet.ec2.get_console_output(InstanceId=instance_id, Latest=True)["Output"])


def test_a_host_whose_gpu_is_not_visible_fails_each_container_start_with_the_nvidia_runtimes_error(fleet_in) -> None:
    # Given a pool whose every host lost its driver after its boot check passed
    fleet = fleet_in(bad("no_gpu_visible"))
    job_id = fleet.submit()
    for second in (0.2, 1.3, 1.4):
        fleet.at(second)

    # Then the container could not start: Batch's attempt says so, with the NVIDIA runtime's words and the host
    job = fleet.job(job_id)
    [attempt] = job["attempts"]
    [registered] = fleet.container_instances()
    assert attempt["statusReason"] == "Task failed to start"
    assert attempt["container"]["reason"].startswith("CannotStartContainerError: Error response from daemon")
    assert "error running hook" in attempt["container"]["reason"] and len(attempt["container"]["reason"]) <= 255
    assert attempt["container"]["containerInstanceArn"] == registered["containerInstanceArn"]
    # And Batch retries it (its retry strategy retries "Cannot*"), the host's console showing the driver's failure
    assert job["status"] == "RUNNABLE"
    text = console(fleet, registered["ec2InstanceId"])
    assert "gpupilot-boot-check: PASS 1 GPUs visible (g4dn.xlarge)" in text and "RmInitAdapter failed" in text


def test_a_job_a_bad_host_failed_holds_it_for_the_worlds_hold_seconds_on_the_fleets_clock(fleet_in) -> None:
    # Given a pool whose only host cannot show its GPU to containers, each job it fails holding it a minute
    world = bad("no_gpu_visible")
    world["instance_types"]["g4dn.xlarge"]["bad_hosts"]["hold_seconds"] = 60
    fleet = fleet_in(world)
    job_id = fleet.submit()

    # When the job's first attempt fails there, and the fleet's clock stands just short of the hold, then past it
    for second in (0.2, 1.3, 1.4, 61.0):
        fleet.at(second)
    held = fleet.job(job_id)
    for second in (61.5, 61.6):
        fleet.at(second)

    # Then the host took nothing while it was held (and Batch launched no other: it waits for the host it has), and
    # failed the job's next attempt once the hold was over
    assert (held["status"], len(held["attempts"])) == ("RUNNABLE", 1)
    assert len(fleet.instances()) == 1
    assert [a["statusReason"] for a in fleet.job(job_id)["attempts"]] == ["Task failed to start"] * 2


def test_what_the_fleet_does_is_dated_on_its_clock_as_batch_ec2_and_ecs_show_it(fleet_in) -> None:
    # Given a fleet whose clock is a day ahead of real time
    fleet = fleet_in({"jobs": {"runtime_seconds": 2}})
    fleet.clock.advance(DAY)
    ahead = datetime.now(UTC) + timedelta(seconds=DAY)

    # When a job runs
    job_id = fleet.submit()
    for second in (0.2, 1.3, 1.4, 3.5):
        fleet.at(second)

    # Then Batch's createdAt, startedAt and stoppedAt, EC2's LaunchTime and ECS's registeredAt are the clock's (the
    # times the sweep and the handlers age things by), a day ahead, the job's two seconds between start and stop
    job = fleet.job(job_id)
    [instance] = fleet.instances()
    [registered] = fleet.container_instances()
    dated = [datetime.fromtimestamp(job[key] / 1000, tz=UTC) for key in ("createdAt", "startedAt", "stoppedAt")]
    dated += [instance["LaunchTime"], registered["registeredAt"]]
    assert all(abs((moment - ahead).total_seconds()) < 600 for moment in dated), (ahead, dated)
    assert job["status"] == "SUCCEEDED" and (job["stoppedAt"] - job["startedAt"]) == 2000


def test_without_a_retry_strategy_a_failed_start_fails_the_job_as_batch_does(fleet_in) -> None:
    # Given a job definition without evaluateOnExit (Batch's default: one attempt)
    fleet = fleet_in(bad("no_gpu_visible"))
    job_id = fleet.submit(retry={"attempts": 1})
    for second in (0.2, 1.3, 1.4):
        fleet.at(second)

    # Then the job FAILED with its one attempt's reasons
    job = fleet.job(job_id)
    assert (job["status"], job["statusReason"]) == ("FAILED", "Task failed to start")
    assert job["container"]["reason"].startswith("CannotStartContainerError")


def test_a_host_whose_gpu_throws_cuda_errors_fails_each_job_with_the_smoke_tests_code(fleet_in) -> None:
    fleet = fleet_in(bad("cuda_error"))
    # The smoke test's job definition: its exit 14 is retried
    smoke = JobRequest(name="cuda-smoke", image="python:3.12-slim", command=["python3", "-c", "...", SMOKE_NAME])
    job_id = fleet.submit(retry=retry_strategy(CapacityType.ON_DEMAND, 1, smoke))
    for second in (0.2, 1.3, 1.4, 1.6, 1.8):
        fleet.at(second)
    job = fleet.job(job_id)
    [attempt] = job["attempts"]
    assert (attempt["container"]["exitCode"], attempt["statusReason"]) == (14, "Essential container in task exited")
    assert job["status"] == "RUNNABLE"  # retried: the retry strategy retries exit 14
    [registered] = fleet.container_instances()
    assert "NVRM: Xid (PCI:0000:00:1e): 48" in console(fleet, registered["ec2InstanceId"])


def test_a_host_that_fails_its_boot_check_registers_without_gpus_says_so_and_takes_no_job(fleet_in) -> None:
    fleet = fleet_in(bad("boot_check_fails"))
    job_id = fleet.submit()
    for second in (0.2, 1.3, 1.4, 3.0):
        fleet.at(second)
    [registered] = fleet.container_instances()
    assert not [r for r in registered["registeredResources"] if r["name"] == "GPU"]
    assert "gpupilot-boot-check: FAIL nvidia-smi did not answer within 60 s" in console(
        fleet, registered["ec2InstanceId"]
    )
    job = fleet.job(job_id)
    assert job["status"] == "RUNNABLE" and job["attempts"] == []


def test_a_draining_container_instance_takes_no_new_job(fleet_in) -> None:
    # Given a host that ran a job and is free again, then drained (as the sweep quarantines a host)
    fleet = fleet_in({"jobs": {"runtime_seconds": 1}})
    first = fleet.submit()
    for second in (0.2, 1.3, 1.4, 2.6):
        fleet.at(second)
    assert fleet.job(first)["status"] == "SUCCEEDED"
    [registered] = fleet.container_instances()
    cluster = registered["containerInstanceArn"].split("/")[1]
    fleet.ecs.update_container_instances_state(
        cluster=cluster, containerInstances=[registered["containerInstanceArn"]], status="DRAINING"
    )

    # When another job comes / Then it is not placed there ("Amazon ECS prevents new tasks from being scheduled")
    second = fleet.submit()
    for moment in (0.2, 0.3, 0.4):
        fleet.at(moment)
    assert fleet.job(second)["status"] == "RUNNABLE" and fleet.job(second)["attempts"] == []
