"""RecordCost and RecordFailure: the outcome once, its cost, and no GPU left behind."""

from __future__ import annotations

from functions.shared.domain.core.vocabulary import AttemptStatus, BatchStatus, CapacityType, JobStatus, MetricName
from functions.shared.domain.jobs.records import AttemptRecord
from functions.shared.domain.jobs.steps import RecordCostInput, RecordFailureInput, SubmittedJob, WaitResult
from functions.shared.usecases.jobs.outcome import attempt_summary, record_cost, record_failure
from tests.unit.usecases.conftest import JOB_ID, submitted


def cost_input(ports, status: BatchStatus = BatchStatus.SUCCEEDED, exit_code: int = 0) -> RecordCostInput:
    attempt = ports.jobs.get_job(JOB_ID).attempts[1]
    return RecordCostInput(
        job_id=JOB_ID,
        batch_job=SubmittedJob(
            batch_job_id=attempt.batch_job_id,
            job_queue=attempt.job_queue,
            job_definition="d",
            attempt=1,
            instance_type=attempt.instance_type,
            capacity=attempt.capacity,
        ),
        finished=WaitResult(
            status=status,
            exit_code=exit_code,
            started_at="2026-11-22T10:00:00.000Z",
            stopped_at="2026-11-22T10:30:00.000Z",
        ),
    )


def test_cost_is_hourly_price_times_runtime_times_gpu_share_and_recorded_once(ports):
    # Given a job that ran 30 minutes on its first candidate
    submitted(ports)
    step = cost_input(ports)
    hourly = ports.prices.on_demand(step.batch_job.instance_type).hourly_usd

    # When RecordCost runs, and is retried
    cost = record_cost(step, ports)
    record_cost(step, ports)

    # Then the cost is half the hourly price, the job SUCCEEDED with it, and the metrics counted it once
    assert cost.usd == round(hourly / 2, 10)
    record = ports.jobs.get_job(JOB_ID)
    assert (record.status, record.cost) == (JobStatus.SUCCEEDED, cost)
    assert ports.metrics.total(MetricName.JOBS_SUCCEEDED) == 1
    assert ports.metrics.total(MetricName.JOB_COST_USD) == cost.usd


def test_a_failed_container_fails_the_job_saying_which_attempt_failed_and_why(ports):
    # Given / When
    submitted(ports)
    instance_type = ports.jobs.get_job(JOB_ID).attempts[1].instance_type
    record_cost(cost_input(ports, BatchStatus.FAILED, exit_code=3), ports)

    # Then
    record = ports.jobs.get_job(JOB_ID)
    assert (record.status, record.error) == (JobStatus.FAILED, f"attempt 1 ({instance_type} on-demand) exited with 3")


def test_a_failed_attempt_gives_batchs_reasons_once_each(ports):
    from functions.shared.usecases.jobs.outcome import failed_attempt_message

    submitted(ports)
    attempt = ports.jobs.get_job(JOB_ID).attempts[1].model_copy(update={"container_reason": "OutOfMemoryError"})
    finished = WaitResult(status=BatchStatus.FAILED, exit_code=137, status_reason="Essential container exited")
    assert failed_attempt_message(2, attempt, finished) == (
        f"attempt 2 ({attempt.instance_type} on-demand) exited with 137: Essential container exited; OutOfMemoryError"
    )


def test_record_failure_says_why_attempt_by_attempt_and_terminates_live_attempts(ports):
    # Given a first attempt that fell back for capacity and a second one still live
    submitted(ports)
    ports.jobs.update_attempt(JOB_ID, 1, {"batch_status": BatchStatus.FAILED})
    ports.jobs.put_attempt(
        JOB_ID,
        2,
        AttemptRecord(
            instance_type="g5.xlarge", capacity=CapacityType.ON_DEMAND, job_queue="q2", batch_job_id="live-2"
        ),
    )
    state = {
        "error": {"Error": "States.Timeout", "Cause": "timed out"},
    }

    # When RecordFailure runs
    result = record_failure(RecordFailureInput(job_id=JOB_ID, state=state), ports)

    # Then the error names the cause and each attempt, the job FAILED, and the live attempt is terminated
    record = ports.jobs.get_job(JOB_ID)
    assert record.status == JobStatus.FAILED
    assert record.error == result["error"]
    assert result["error"].startswith("States.Timeout: timed out | attempts: 1. ")
    assert "2. g5.xlarge on-demand: SUBMITTED" in result["error"]
    assert ports.batch.terminated == [("live-2", "GPU Pilot workflow failed")]


def test_record_failure_of_an_invalid_pool_gives_its_diagnosis(ports):
    # Given the workflow gave up on an INVALID pool (its diagnosis is in the queue step's output)
    submitted(ports)
    diagnosis = {"category": "COMPUTE_ENVIRONMENT_INVALID", "reason": "compute environment p is INVALID: gone"}

    # When / Then
    result = record_failure(RecordFailureInput(job_id=JOB_ID, state={"queue": {"diagnosis": diagnosis}}), ports)
    assert result["error"].startswith("COMPUTE_ENVIRONMENT_INVALID: compute environment p is INVALID: gone")


# -- every attempt has a cost, whatever its end ----------------------------------------------------
def ended(ports, status: str, started_ms: int | None = None, stopped_ms: int | None = None):
    from functions.shared.domain.fleet.batch import BatchJobEvent, BatchJobState
    from functions.shared.usecases.jobs.track import record_batch_event

    attempt = ports.jobs.get_job(JOB_ID).attempts[1]
    detail = {"jobId": attempt.batch_job_id, "jobName": f"gpupilot-{JOB_ID}-a1", "status": status,
              "container": {"exitCode": 137, "reason": "Essential container in task exited"}}  # fmt: skip
    if started_ms is not None:
        detail |= {"startedAt": started_ms, "stoppedAt": stopped_ms}
    return record_batch_event(BatchJobEvent(at="2026-11-22T10:00:00.000Z", job=BatchJobState.from_batch(detail)), ports)


def test_a_cancelled_job_that_ran_is_priced_from_its_attempts_end(ports):
    from functions.shared.domain.jobs.views import job_view

    # Given a job running for 10 minutes, then cancelled (Batch reports its attempt FAILED)
    submitted(ports)
    ports.jobs.finish(JOB_ID, JobStatus.CANCELLED)
    ended(ports, "FAILED", started_ms=1_800_000_000_000, stopped_ms=1_800_000_600_000)

    # Then the attempt carries its cost, and so does the job, with Batch's container reason
    view = job_view(ports.jobs.get_job(JOB_ID))
    attempt = view.attempts[0]
    hourly = ports.prices.on_demand(attempt.instance_type).hourly_usd
    assert attempt.cost is not None and attempt.cost.usd == round(hourly / 6, 12)
    assert view.cost is not None and view.cost.usd == attempt.cost.usd
    assert (attempt.exit_code, attempt.container_reason) == (137, "Essential container in task exited")


def test_an_attempt_that_never_ran_costs_nothing_and_the_job_pays_for_the_one_that_did(ports):
    # Given a first attempt cancelled while RUNNABLE (a fallback), priced when Batch said it ended
    submitted(ports)
    ended(ports, "FAILED")
    first = ports.jobs.get_job(JOB_ID).attempts[1]
    assert first.cost is not None and first.cost.usd == 0.0

    # When the job's run is recorded on that attempt number / Then the job's cost is every attempt's sum
    cost = record_cost(cost_input(ports), ports)
    assert cost is not None and cost.usd == ports.jobs.get_job(JOB_ID).attempts[1].cost.usd


def test_a_spot_attempt_is_priced_at_the_spot_price(ports):
    ports.prices.spot_table["g4dn.xlarge"] = 0.2
    submitted(ports, capacity="spot", instance_types=["g4dn.xlarge"])
    cost = record_cost(cost_input(ports), ports)
    assert cost is not None and (cost.hourly_usd, cost.usd) == (0.2, 0.1)
    assert cost.pricing.startswith("test spot price")


def test_a_spot_attempt_is_priced_in_the_zone_its_container_instance_ran_in(ports):
    from functions.shared.domain.fleet.batch import ContainerInstanceState

    # Given a spot attempt that may run in either zone, and ran on a container instance in us-east-1b
    ports.prices.spot_table["g4dn.xlarge"] = 0.2
    submitted(ports, capacity="spot", instance_types=["g4dn.xlarge"])
    arn = "arn:aws:ecs:us-east-1:123456789012:container-instance/OnDemand_Batch_1/abc"
    ports.fleet.by_cluster["cluster"] = [ContainerInstanceState(arn=arn, zone="us-east-1b")]
    assert ports.jobs.get_job(JOB_ID).attempts[1].zones == ["us-east-1a", "us-east-1b"]
    ports.jobs.update_attempt(JOB_ID, 1, {"container_instance_arn": arn})
    # When it is priced / Then at the spot price of us-east-1b only, over its runtime
    cost = record_cost(cost_input(ports), ports)
    assert cost is not None and cost.pricing.startswith("test spot price in us-east-1b over ")


def test_a_spot_attempt_whose_price_aws_refuses_ends_without_a_cost_not_without_its_status(ports):
    from functions.shared.domain.core.errors import SignalUnavailable

    # Given a spot attempt that ran, and spot price history refused (an organisation's policy)
    ports.prices.spot_table["g4dn.xlarge"] = 0.2
    submitted(ports, capacity="spot", instance_types=["g4dn.xlarge"])
    ports.prices.spot_error = SignalUnavailable("DescribeSpotPriceHistory", "UnauthorizedOperation")

    # When RecordCost runs / Then the job succeeded, unpriced (a later writer may price the attempt)
    assert record_cost(cost_input(ports), ports) is None
    assert ports.jobs.get_job(JOB_ID).status == JobStatus.SUCCEEDED
    assert ports.jobs.get_job(JOB_ID).attempts[1].cost is None


def test_spot_prices_aws_refuses_leave_the_types_unpriced_for_waste_and_cost(ports):
    from functions.shared.domain.core.errors import SignalUnavailable
    from functions.shared.usecases.cost.pricing import hourly_quotes

    # Given spot price history throttled past the retries / When a sweep prices a spot pool's instances
    ports.prices.spot_table["g4dn.xlarge"] = 0.2
    ports.prices.spot_error = SignalUnavailable("DescribeSpotPriceHistory", "RequestLimitExceeded")

    # Then they are unpriced, and the sweep goes on
    assert hourly_quotes(["g4dn.xlarge"], True, ["us-east-1a"], ports) == {}


def test_a_type_without_a_price_ends_without_a_cost_not_without_its_status(ports):
    submitted(ports)
    ports.prices._table = {}
    assert record_cost(cost_input(ports), ports) is None
    assert ports.jobs.get_job(JOB_ID).status == JobStatus.SUCCEEDED


def ran_on_host(ports, ec2_instance_id: str = "i-0abc") -> str:
    """The job's first attempt ran on a container instance ECS describes (registered the day before)."""
    from functions.shared.domain.fleet.batch import ContainerInstanceState

    arn = f"arn:aws:ecs:us-east-1:123456789012:container-instance/OnDemand_Batch_1/{ec2_instance_id}"
    ports.fleet.by_cluster["cluster"] = [
        ContainerInstanceState(arn=arn, ec2_instance_id=ec2_instance_id, registered_at="2026-11-21T23:50:00.000Z")
    ]
    ports.jobs.update_attempt(JOB_ID, 1, {"container_instance_arn": arn})
    return arn


def test_a_job_alone_on_a_larger_instance_pays_its_share_and_the_rest_is_unused_share_waste(ports):
    from functions.shared.usecases.cost.report import cost_report

    # Given a 1-GPU job that ran 30 minutes alone on a 4-GPU g4dn.12xlarge
    submitted(ports, instance_types=["g4dn.12xlarge"])
    ran_on_host(ports)

    # When RecordCost prices it
    cost = record_cost(cost_input(ports), ports)

    # Then the job pays a quarter and shows what the instance cost; the other three quarters are waste, so the
    # job's cost and the waste add up to the instance's half hour
    assert cost is not None and (cost.gpu_share, cost.instance_usd) == (0.25, 3.912 / 2)
    report = cost_report("2026-11-01", ports.jobs.get_job(JOB_ID).created_at[:10], ports)
    assert report.waste.by_reason == {"unused_share": 3.912 / 2 * 0.75}
    assert report.total_usd + report.waste.by_reason["unused_share"] == cost.instance_usd


def test_an_attempt_priced_again_adds_nothing_to_the_unused_share(ports):
    submitted(ports, instance_types=["g4dn.12xlarge"])
    ran_on_host(ports)
    record_cost(cost_input(ports), ports)
    ports.jobs.update_attempt(JOB_ID, 1, {"cost": None})  # as if a second writer priced it before the first wrote

    record_cost(cost_input(ports), ports)

    [ledger] = ports.waste.shared.values()
    assert list(ledger.occupants) == [f"{JOB_ID}#1"] and ledger.usd == 3.912 / 2 * 0.75


def test_the_unused_share_of_an_instance_ecs_no_longer_describes_is_not_counted(ports):
    # Given an attempt whose container instance ECS does not describe any more
    submitted(ports, instance_types=["g4dn.12xlarge"])
    ports.jobs.update_attempt(JOB_ID, 1, {"container_instance_arn": "arn:aws:ecs:us-east-1:1:container-instance/c/x"})

    # When it is priced / Then it costs its share, and no waste is claimed for a host GPU Pilot cannot see
    cost = record_cost(cost_input(ports), ports)
    assert cost is not None and cost.gpu_share == 0.25
    assert ports.waste.shared == {}


def test_an_attempts_summary_names_its_region_only_in_a_deployment_of_several_regions():
    # Given an attempt that failed in us-west-2
    attempt = AttemptRecord(instance_type="g5.xlarge", capacity=CapacityType.ON_DEMAND, job_queue="q",
                            status=AttemptStatus.FAILED, region="us-west-2")  # fmt: skip
    # Then a deployment of several regions names it; a home-only one reads as before regions
    assert attempt_summary(attempt, regional=True) == "g5.xlarge on-demand: FAILED (us-west-2)"
    assert attempt_summary(attempt) == "g5.xlarge on-demand: FAILED"
