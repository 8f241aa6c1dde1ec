"""What a local deployment is: the account, the functions with their environments, the policies of their roles, the
event rules and the state machine, per region."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpupilot.localcloud.dispatch import LocalFunction
from gpupilot.localcloud.iam import Statement

ACCOUNT_ID = "123456789012"
TABLE_NAME = "gpupilot-jobs"


class EventRule(BaseModel):
    """An EventBridge rule of the stack: its pattern (or schedule) and the functions it targets."""

    name: str
    pattern: dict[str, Any] | None = None
    schedule: str | None = None
    targets: list[str] = Field(default_factory=list)
    forward_to: list[str] = Field(default_factory=list, description="Event buses (ARNs) it forwards matches to")


class RegionDeployment(BaseModel):
    """What a capacity region's stack created locally, in its region."""

    region: str
    subnets: list[str]
    security_groups: list[str]
    instance_profile_arn: str
    launch_template_name: str
    network_parameter: str
    event_rules: list[EventRule]
    instance_profile_roles: dict[str, list[str]] = Field(default_factory=dict)


class Deployment(BaseModel):
    """What was created locally, by name and ARN, and each function's IAM policy as the template declares it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    table_name: str
    state_machine_arn: str
    functions: dict[str, LocalFunction]
    subnets: list[str]
    security_groups: list[str]
    instance_profile_arn: str
    launch_template_name: str
    alarm_topic_arn: str
    alarms: list[str]
    event_rules: list[EventRule]
    policies: dict[str, list[Statement]] = Field(default_factory=dict)
    instance_profile_roles: dict[str, list[str]] = Field(default_factory=dict)
    regions: dict[str, RegionDeployment] = Field(default_factory=dict, description="The capacity regions' stacks")

    def environment(self, key: str) -> dict[str, str]:
        """The environment the template gives function `key`."""
        return dict(self.functions[key].environment)
