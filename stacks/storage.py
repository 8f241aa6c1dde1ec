"""The single DynamoDB table: jobs, attempts, timelines, findings and the unavailable-offerings memory."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from functions.shared.constants import (
    GSI1_NAME,
    GSI1_PK,
    GSI1_SK,
    GSI2_ATTRIBUTES,
    GSI2_LEGACY_NAME,
    GSI2_NAME,
    GSI2_PK,
    GSI2_SK,
    TABLE_PK,
    TABLE_SK,
    TTL_ATTRIBUTE,
)
from stacks.nag import Kind, acknowledge_checkov


class Storage(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        string = dynamodb.AttributeType.STRING
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name=TABLE_PK, type=string),
            sort_key=dynamodb.Attribute(name=TABLE_SK, type=string),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            # Unavailable offerings and idempotency records expire on their own.
            time_to_live_attribute=TTL_ATTRIBUTE,
            # Job history and cost records outlive any one deployment of the stack.
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge_checkov(self.table, Kind.TABLE)
        # Every job by creation time, sharded by job id like the index below (adapters/job_lists.py), so a burst
        # of submits does not write to one partition.
        self.table.add_global_secondary_index(
            index_name=GSI1_NAME,
            partition_key=dynamodb.Attribute(name=GSI1_PK, type=string),
            sort_key=dynamodb.Attribute(name=GSI1_SK, type=string),
            projection_type=dynamodb.ProjectionType.ALL,
        )

        # Sparse: only unfinished jobs carry its keys, so the sweep reads them without scanning every job.
        # Sharded by job id too, over the same shards. It projects only what the sweep reads of a job: its reads
        # and the index's writes cost a fraction of the whole record's, and so does parsing the answers.
        self.table.add_global_secondary_index(
            index_name=GSI2_NAME,
            partition_key=dynamodb.Attribute(name=GSI2_PK, type=string),
            sort_key=dynamodb.Attribute(name=GSI2_SK, type=string),
            projection_type=dynamodb.ProjectionType.INCLUDE,
            non_key_attributes=list(GSI2_ATTRIBUTES),
        )
        # Its predecessor (every attribute), kept while the deployment that adds GSI2_NAME backfills it
        # (constants.GSI2_LEGACY_NAME): CloudFormation adds or deletes one index per update.
        self.table.add_global_secondary_index(
            index_name=GSI2_LEGACY_NAME,
            partition_key=dynamodb.Attribute(name=GSI2_PK, type=string),
            sort_key=dynamodb.Attribute(name=GSI2_SK, type=string),
            projection_type=dynamodb.ProjectionType.ALL,
        )

    @property
    def index_arns(self) -> list[str]:
        """The table's indexes (each function's grants name the table and, for queries, these)."""
        return [f"{self.table.table_arn}/index/{name}" for name in (GSI1_NAME, GSI2_NAME, GSI2_LEGACY_NAME)]
