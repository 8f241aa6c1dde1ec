"""Alarms on the control plane's own metrics and a dashboard of jobs, cost and fleet health."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from functions.shared.constants import METRICS_NAMESPACE, SERVICE_NAME, SWEEP_RATE_MINUTES
from functions.shared.domain.core.vocabulary import MetricName
from stacks.functions import construct_name
from stacks.settings import ALARM_PERIOD

Op = cloudwatch.ComparisonOperator
# WasteUsd is what a sweep adds: $1 in five minutes is about $12 an hour of GPUs serving nothing.
WASTE_ALARM_USD = 1.0


@dataclass(frozen=True)
class MetricAlarm:
    metric: MetricName
    statistic: str
    operator: cloudwatch.ComparisonOperator
    threshold: float
    description: str


# Alarms on the metrics the use cases emit through Powertools EMF (dimension service=<SERVICE_NAME>);
# tests/infra checks every one of them has an emitter.
CUSTOM_ALARMS: tuple[MetricAlarm, ...] = (
    MetricAlarm(MetricName.JOBS_FAILED, "Sum", Op.GREATER_THAN_THRESHOLD, 0, "A GPU job failed in the last 5 minutes"),
    MetricAlarm(
        MetricName.STUCK_JOBS,
        "Maximum",
        Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        1,
        "The health sweep found jobs stuck in RUNNABLE past their stuck_after time",
    ),
    MetricAlarm(
        MetricName.INVALID_COMPUTE_ENVIRONMENTS,
        "Maximum",
        Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        1,
        "A GPU Pilot pool's compute environment is INVALID: jobs fall back to other GPU types meanwhile",
    ),
    MetricAlarm(
        MetricName.UNREGISTERED_INSTANCES,
        "Maximum",
        Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        1,
        "GPU instances ran past the grace period without joining ECS (user data, route to ECS, instance role)",
    ),
    MetricAlarm(
        MetricName.GPU_LESS_INSTANCES,
        "Maximum",
        Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        1,
        "GPU instances joined ECS without their GPUs (ECS_ENABLE_GPU_SUPPORT, NVIDIA AMI)",
    ),
    MetricAlarm(
        MetricName.DISABLED_POOLS,
        "Maximum",
        Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        1,
        "A GPU Pilot pool's job queue is DISABLED (its instances kept failing to register): fix, then enable it",
    ),
    MetricAlarm(
        MetricName.QUARANTINED_HOSTS,
        "Sum",
        Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        1,
        "The health sweep quarantined a bad GPU host (BAD_GPU_HOST: drained and terminated, its jobs retried "
        "elsewhere): GET /health shows the evidence",
    ),
    MetricAlarm(
        MetricName.UNHEALTHY_POOLS,
        "Maximum",
        Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        1,
        "Too many of a pool's GPU hosts are bad at once (POOL_UNHEALTHY): the AMI, driver or launch template is the "
        "likely cause, and no host was terminated",
    ),
    MetricAlarm(
        MetricName.WASTE_USD,
        "Sum",
        Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        WASTE_ALARM_USD,
        f"GPU instances wasted ${WASTE_ALARM_USD:g} or more in 5 minutes without serving a job (GET /costs: waste)",
    ),
)


def service_metric(name: MetricName, statistic: str, period: Duration = ALARM_PERIOD) -> cloudwatch.Metric:
    """A custom metric as Powertools emits it: our namespace, the `service` dimension."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name.value,
        dimensions_map={"service": SERVICE_NAME},
        statistic=statistic,
        period=period,
    )


class Observability(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.IFunction],
        failure_queues: Mapping[str, sqs.IQueue],
        state_machine: sfn.IStateMachine,
        alarm_email: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        key = kms.Key(self, "AlarmTopicKey", description="GPU Pilot alarm topic", enable_key_rotation=True)
        # CloudWatch alarms publish to the encrypted topic only if the key lets them encrypt for it.
        key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        self.topic = sns.Topic(self, "AlarmTopic", display_name="GPU Pilot alarms", master_key=key, enforce_ssl=True)
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        action = cw_actions.SnsAction(self.topic)

        self.alarms: list[cloudwatch.Alarm] = []
        for spec in CUSTOM_ALARMS:
            self._alarm(
                spec.metric.value,
                service_metric(spec.metric, spec.statistic),
                spec.operator,
                spec.threshold,
                spec.description,
                action,
            )
        for fn_key, function in functions.items():
            self._alarm(
                f"{construct_name(fn_key)}Errors",
                function.metric_errors(period=ALARM_PERIOD, statistic="Sum"),
                Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                1,
                f"The {fn_key} Lambda raised errors",
                action,
            )
        # An asynchronous invocation that failed after Lambda's retries (a Batch event job_events could not
        # record, a sweep that crashed) waits in its function's failure queue: someone should look.
        for fn_key, queue in failure_queues.items():
            self._alarm(
                f"{construct_name(fn_key)}FailedEvents",
                queue.metric_approximate_number_of_messages_visible(period=ALARM_PERIOD, statistic="Maximum"),
                Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                1,
                f"{fn_key} failed to handle an asynchronous invocation after Lambda's retries: see its failure queue",
                action,
            )
        # A sweep that stops running reports nothing, which the alarms above read as healthy.
        sweep = functions.get("health_sweep")
        if sweep is not None:
            self._alarm(
                "SweepNotRunning",
                sweep.metric_invocations(period=Duration.minutes(SWEEP_RATE_MINUTES * 3), statistic="Sum"),
                Op.LESS_THAN_THRESHOLD,
                1,
                "The scheduled health sweep has not run for three of its periods",
                action,
                missing=cloudwatch.TreatMissingData.BREACHING,
            )
        self._alarm(
            "ExecutionsFailed",
            state_machine.metric_failed(period=ALARM_PERIOD, statistic="Sum"),
            Op.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            1,
            "GpuJob executions failed",
            action,
        )

        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.days(1))
        hourly = Duration.hours(1)
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="GPU spend and waste (USD per hour)",
                left=[
                    service_metric(MetricName.JOB_COST_USD, "Sum", hourly),
                    service_metric(MetricName.WASTE_USD, "Sum", hourly),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Jobs finished",
                left=[service_metric(MetricName.JOBS_SUCCEEDED, "Sum"), service_metric(MetricName.JOBS_FAILED, "Sum")],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Fleet health (from the sweep)",
                left=[
                    service_metric(MetricName.STUCK_JOBS, "Maximum"),
                    service_metric(MetricName.INVALID_COMPUTE_ENVIRONMENTS, "Maximum"),
                    service_metric(MetricName.UNREGISTERED_INSTANCES, "Maximum"),
                    service_metric(MetricName.GPU_LESS_INSTANCES, "Maximum"),
                    service_metric(MetricName.DISCONNECTED_AGENTS, "Maximum"),
                    service_metric(MetricName.DISABLED_POOLS, "Maximum"),
                    service_metric(MetricName.IDLE_INSTANCES, "Maximum"),
                    service_metric(MetricName.QUARANTINED_HOSTS, "Sum"),
                    service_metric(MetricName.UNHEALTHY_POOLS, "Maximum"),
                    service_metric(MetricName.FALLBACKS, "Sum"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="GpuJob executions",
                left=[
                    state_machine.metric_started(period=ALARM_PERIOD),
                    state_machine.metric_succeeded(period=ALARM_PERIOD),
                    state_machine.metric_failed(period=ALARM_PERIOD),
                    state_machine.metric_timed_out(period=ALARM_PERIOD),
                ],
                width=12,
            ),
        )
        daily = Duration.days(1)
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Cost per day (USD): jobs and waste",
                left=[
                    service_metric(MetricName.JOB_COST_USD, "Sum", daily),
                    service_metric(MetricName.WASTE_USD, "Sum", daily),
                ],
                stacked=True,
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Findings by kind (from the sweep)",
                left=[
                    service_metric(metric, "Maximum")
                    for metric in (
                        MetricName.STUCK_JOBS,
                        MetricName.UNREGISTERED_INSTANCES,
                        MetricName.GPU_LESS_INSTANCES,
                        MetricName.DISCONNECTED_AGENTS,
                        MetricName.INVALID_COMPUTE_ENVIRONMENTS,
                        MetricName.DISABLED_POOLS,
                        MetricName.IDLE_POOLS,
                        MetricName.RETIRING_POOLS,
                        MetricName.QUARANTINED_HOSTS,
                        MetricName.UNHEALTHY_POOLS,
                    )
                ],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms), width=24),
        )

    def _alarm(
        self,
        name: str,
        metric: cloudwatch.IMetric,
        operator: cloudwatch.ComparisonOperator,
        threshold: float,
        description: str,
        action: cloudwatch.IAlarmAction,
        missing: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    ) -> None:
        alarm = cloudwatch.Alarm(
            self,
            name,
            metric=metric,
            comparison_operator=operator,
            threshold=threshold,
            evaluation_periods=1,
            alarm_description=description,
            # Mostly, no datapoint means nothing happened: no failures, no sweep findings.
            treat_missing_data=missing,
        )
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)
        self.alarms.append(alarm)
