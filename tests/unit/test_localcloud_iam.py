"""The local cloud's IAM decides as AWS decides: an explicit Deny wins, an Allow needs its action, resource and
every condition to match, the condition keys are the ones AWS presents for the call, and what the local cloud
cannot evaluate is refused loudly rather than guessed."""

from __future__ import annotations

from typing import Any

import pytest

from gpupilot.localcloud.iam import Arn, Condition, PolicyError, Request, authorize, required, statements_of

ACCOUNT = "123456789012"
INSTANCE = f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-0abc"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/gpupilot-job-trainer"


def policy(*statements: dict[str, Any]) -> list[Any]:
    return statements_of({"Statement": list(statements)}, lambda value: value)


def allow(action: str, resource: str = "*", **condition: dict[str, Any]) -> dict[str, Any]:
    statement: dict[str, Any] = {"Effect": "Allow", "Action": action, "Resource": resource}
    if condition:
        statement["Condition"] = condition
    return statement


def allowed(statements: list[Any], request: Request) -> bool:
    return authorize(statements, request) is None


# -- Allow, Deny ------------------------------------------------------------------------------------------
def test_an_explicit_deny_wins_over_an_allow_of_the_same_call() -> None:
    # Given a role allowed every EC2 call and denied terminating instances
    statements = policy(allow("ec2:*"), {"Effect": "Deny", "Action": "ec2:TerminateInstances", "Resource": "*"})
    # Then describing is allowed, terminating refused with an explicit deny
    assert allowed(statements, Request("ec2:DescribeInstances", "*"))
    assert authorize(statements, Request("ec2:TerminateInstances", INSTANCE)) == (
        "with an explicit deny in its role's policy"
    )


def test_a_deny_whose_condition_does_not_match_leaves_the_allow_standing() -> None:
    deny = {
        "Effect": "Deny",
        "Action": "ec2:TerminateInstances",
        "Resource": "*",
        "Condition": {"StringNotLike": {"ec2:ResourceTag/gpupilot:pool": "gpupilot-*"}},
    }
    statements = policy(allow("ec2:TerminateInstances"), deny)
    assert allowed(statements, Request("ec2:TerminateInstances", INSTANCE, tags={"gpupilot:pool": "gpupilot-od"}))
    assert not allowed(statements, Request("ec2:TerminateInstances", INSTANCE, tags={}))


def test_nothing_is_allowed_without_an_allow() -> None:
    assert authorize(policy(), Request("batch:ListJobs", "*")) == (
        "(its role in the synthesized template grants no such permission)"
    )


def test_actions_match_without_case_and_resources_with_it_and_wildcards_are_iams_only() -> None:
    statements = policy(allow("Batch:Describe*", f"arn:aws:batch:us-east-1:{ACCOUNT}:job-queue/gpupilot-[ab]?"))
    queue = f"arn:aws:batch:us-east-1:{ACCOUNT}:job-queue/gpupilot-[ab]x"
    assert allowed(statements, Request("batch:DescribeJobQueues", queue))
    # `[` is a character in IAM, not a set (as fnmatch would read it); resources are case-sensitive
    assert not allowed(statements, Request("batch:DescribeJobQueues", queue.replace("[ab]", "a")))
    assert not allowed(statements, Request("batch:DescribeJobQueues", queue.upper()))


# -- conditions -------------------------------------------------------------------------------------------
def test_string_like_on_a_resource_tag_reads_the_tags_the_resource_carries() -> None:
    statements = policy(allow("ec2:TerminateInstances", StringLike={"ec2:ResourceTag/gpupilot:pool": "gpupilot-*"}))
    assert allowed(statements, Request("ec2:TerminateInstances", INSTANCE, tags={"gpupilot:pool": "gpupilot-od-1"}))
    assert not allowed(statements, Request("ec2:TerminateInstances", INSTANCE, tags={"gpupilot:pool": "other"}))
    assert not allowed(statements, Request("ec2:TerminateInstances", INSTANCE, tags={"team": "gpupilot-od-1"}))


def test_a_missing_key_fails_a_positive_operator_and_satisfies_a_negated_one_or_if_exists() -> None:
    request = Request("iam:PassRole", ROLE)  # no iam:PassedToService in this request's context
    assert not allowed(policy(allow("iam:PassRole", StringEquals={"iam:PassedToService": "x"})), request)
    assert allowed(policy(allow("iam:PassRole", StringNotEquals={"iam:PassedToService": "x"})), request)
    assert allowed(policy(allow("iam:PassRole", StringEqualsIfExists={"iam:PassedToService": "x"})), request)


def test_a_keys_values_are_alternatives_and_all_conditions_must_hold() -> None:
    statements = policy(
        allow(
            "iam:PassRole",
            StringEquals={"iam:PassedToService": ["batch.amazonaws.com", "ecs-tasks.amazonaws.com"]},
            StringLike={"iam:PassedToService": "*.amazonaws.com"},
        )
    )
    for service in ("batch.amazonaws.com", "ecs-tasks.amazonaws.com"):
        assert allowed(statements, Request("iam:PassRole", ROLE, {"iam:PassedToService": service}))
    assert not allowed(statements, Request("iam:PassRole", ROLE, {"iam:PassedToService": "lambda.amazonaws.com"}))


def test_string_equals_is_case_sensitive_unless_told_otherwise_and_key_names_are_not() -> None:
    request = Request("iam:PassRole", ROLE, {"iam:passedtoservice": "Batch.amazonaws.com"})
    assert not allowed(policy(allow("iam:PassRole", StringEquals={"iam:PassedToService": "batch.amazonaws.com"})),
                       request)  # fmt: skip
    assert allowed(
        policy(allow("iam:PassRole", StringEqualsIgnoreCase={"iam:PassedToService": "batch.amazonaws.com"})), request
    )


def test_arn_like_compares_each_of_an_arns_six_parts_on_its_own() -> None:
    statements = policy(allow("ec2:TerminateInstances", ArnLike={"aws:ResourceTag/owner": "arn:aws:iam::*:role/x*"}))
    owned_by = lambda owner: Request("ec2:TerminateInstances", INSTANCE, tags={"owner": owner})  # noqa: E731
    assert allowed(statements, owned_by(f"arn:aws:iam::{ACCOUNT}:role/xy"))
    # A `*` in one part does not run into the next (a whole-string match would take "<account>:extra" for it)
    assert not allowed(statements, owned_by(f"arn:aws:iam::{ACCOUNT}:extra:role/xy"))


@pytest.mark.parametrize(
    ("statement", "what"),
    [
        (allow("ec2:TerminateInstances", NumericLessThan={"ec2:ResourceTag/n": "1"}), "operator NumericLessThan"),
        (allow("ec2:TerminateInstances", **{"ForAnyValue:StringLike": {"aws:TagKeys": "x"}}), "ForAnyValue"),
        (allow("ec2:TerminateInstances", StringEquals={"aws:SourceIp": "10.0.0.1"}), "key aws:SourceIp"),
        (allow("ec2:TerminateInstances", StringEquals={"ec2:ResourceTag/o": "${aws:username}"}), "policy variables"),
        ({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}, "NotAction"),
    ],
)
def test_what_the_local_cloud_cannot_evaluate_is_refused_loudly(statement: dict[str, Any], what: str) -> None:
    with pytest.raises(PolicyError, match=what):
        policy(statement)


def test_a_resource_tag_condition_on_a_resource_whose_tags_are_unknown_is_refused_loudly() -> None:
    statements = policy(allow("batch:TerminateJob", StringEquals={"aws:ResourceTag/team": "ml"}))
    with pytest.raises(PolicyError, match="does not know the tags"):
        authorize(statements, Request("batch:TerminateJob", f"arn:aws:batch:us-east-1:{ACCOUNT}:job/1"))


# -- what AWS presents for a call ---------------------------------------------------------------------------
ARNS = Arn("us-east-1", ACCOUNT)


def test_a_job_definition_passes_its_roles_through_batch() -> None:
    # Given a RegisterJobDefinition naming a job role and an execution role
    params = {"jobDefinitionName": "gpupilot-train", "type": "container",
              "containerProperties": {"jobRoleArn": ROLE, "executionRoleArn": f"{ROLE}-exec"}}  # fmt: skip
    # Then AWS authorizes the definition, then iam:PassRole on each role with Batch's service key
    checks = required("batch", "batch", "RegisterJobDefinition", params, ARNS, lambda _profile: ())
    assert [(c.action, c.resource) for c in checks] == [
        ("batch:RegisterJobDefinition", f"arn:aws:batch:us-east-1:{ACCOUNT}:job-definition/gpupilot-train"),
        ("iam:PassRole", ROLE),
        ("iam:PassRole", f"{ROLE}-exec"),
    ]
    assert {c.value("iam:PassedToService") for c in checks[1:]} == {"batch.amazonaws.com"}
    assert checks[0].value("iam:PassedToService") is None


def test_terminating_instances_is_authorized_per_instance_with_the_tags_each_carries() -> None:
    tags = {f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-1": {"gpupilot:pool": "gpupilot-od"}}
    checks = required("ec2", "ec2", "TerminateInstances", {"InstanceIds": ["i-1", "i-2"]}, ARNS,
                      lambda _profile: (), lambda arn: tags.get(arn, {}))  # fmt: skip
    assert [(c.resource, c.tags) for c in checks] == [
        (f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-1", {"gpupilot:pool": "gpupilot-od"}),
        (f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-2", {}),
    ]


def test_reading_an_instances_console_is_authorized_on_the_instance_with_its_tags() -> None:
    # ec2:GetConsoleOutput has the instance resource type (Service Authorization Reference, Amazon EC2)
    tags = {f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-1": {"gpupilot:pool": "gpupilot-od"}}
    [check] = required("ec2", "ec2", "GetConsoleOutput", {"InstanceId": "i-1", "Latest": True}, ARNS,
                       lambda _profile: (), lambda arn: tags.get(arn, {}))  # fmt: skip
    assert (check.action, check.resource, check.tags) == (
        "ec2:GetConsoleOutput",
        f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-1",
        {"gpupilot:pool": "gpupilot-od"},
    )


def test_draining_is_authorized_on_each_container_instance_of_its_cluster() -> None:
    # ecs:UpdateContainerInstancesState has the container-instance resource type (container-instance/<cluster>/<id>)
    cluster = f"arn:aws:ecs:us-east-1:{ACCOUNT}:cluster/gpupilot-od_Batch_1"
    params = {"cluster": cluster, "containerInstances": ["4f1c"], "status": "DRAINING"}
    [check] = required("ecs", "ecs", "UpdateContainerInstancesState", params, ARNS, lambda _profile: ())
    assert (check.action, check.resource) == (
        "ecs:UpdateContainerInstancesState",
        f"arn:aws:ecs:us-east-1:{ACCOUNT}:container-instance/gpupilot-od_Batch_1/4f1c",
    )


def test_an_action_without_resource_types_is_authorized_on_everything() -> None:
    # servicequotas:GetServiceQuota has no resource types: AWS authorizes it on "*", not on the quota's ARN
    params = {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"}
    [check] = required("service-quotas", "servicequotas", "GetServiceQuota", params, ARNS, lambda _profile: ())
    assert (check.action, check.resource) == ("servicequotas:GetServiceQuota", "*")


def test_a_transaction_is_authorized_as_the_writes_it_holds_and_a_batch_read_on_its_table() -> None:
    # Given a transaction of an update and a put, and a batch read, on the jobs table
    table = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/jobs"
    key = {"pk": {"S": "JOB#1"}, "sk": {"S": "JOB"}}
    writes = {"TransactItems": [{"Update": {"TableName": "jobs", "Key": key, "UpdateExpression": "SET a = :a"}},
                                {"Put": {"TableName": "jobs", "Item": key}}]}  # fmt: skip
    reads = {"RequestItems": {"jobs": {"Keys": [key]}}}
    # When / Then each write is authorized as its single form (there is no dynamodb:TransactWriteItems action)
    checks = required("dynamodb", "dynamodb", "TransactWriteItems", writes, ARNS, lambda _profile: ())
    assert [(c.action, c.resource) for c in checks] == [("dynamodb:UpdateItem", table), ("dynamodb:PutItem", table)]
    [check] = required("dynamodb", "dynamodb", "BatchGetItem", reads, ARNS, lambda _profile: ())
    assert (check.action, check.resource) == ("dynamodb:BatchGetItem", table)


def test_an_ec2_call_that_creates_with_tags_is_authorized_with_its_request_tags_and_the_tagging_too() -> None:
    # Given a CreateLaunchTemplate that tags the template it creates
    params = {"LaunchTemplateName": "lt", "LaunchTemplateData": {},
              "TagSpecifications": [{"ResourceType": "launch-template",
                                     "Tags": [{"Key": "gpupilot:reservation", "Value": "cr-1"}]}]}  # fmt: skip
    # Then AWS authorizes the creation on the new template with aws:RequestTag, and ec2:CreateTags naming the call
    create, tag = required("ec2", "ec2", "CreateLaunchTemplate", params, ARNS, lambda _profile: ())
    template = f"arn:aws:ec2:us-east-1:{ACCOUNT}:launch-template/new"
    assert (create.action, create.resource, tag.action, tag.resource) == (
        "ec2:CreateLaunchTemplate", template, "ec2:CreateTags", template)  # fmt: skip
    assert create.value("aws:RequestTag/gpupilot:reservation") == "cr-1"
    assert tag.value("ec2:CreateAction") == "CreateLaunchTemplate"
    # And a grant held to the tag allows it, one without it does not
    held = policy(allow("ec2:CreateLaunchTemplate", "arn:aws:ec2:*:*:launch-template/*",
                        StringLike={"aws:RequestTag/gpupilot:reservation": "cr-*"}))  # fmt: skip
    assert allowed(held, create)
    untagged = required("ec2", "ec2", "CreateLaunchTemplate", {"LaunchTemplateName": "lt"}, ARNS, lambda _p: ())
    assert [c.action for c in untagged] == ["ec2:CreateLaunchTemplate"]
    assert not allowed(held, untagged[0])


BATCH_ROLE = f"arn:aws:iam::{ACCOUNT}:role/aws-service-role/batch.amazonaws.com/AWSServiceRoleForBatch"
MANAGED = {"computeEnvironmentName": "gpupilot-od-1", "type": "MANAGED", "computeResources": {}}


def test_a_managed_compute_environment_without_a_service_role_asks_for_batchs_service_linked_role_if_absent() -> None:
    # Given no service role in the call, and an account without Batch's service-linked role
    checks = required(
        "batch", "batch", "CreateComputeEnvironment", MANAGED, ARNS, lambda _p: (), role_exists=lambda _a: False
    )
    # Then Batch creates it with the caller's permission: on that role, for the service it serves
    assert Request("iam:CreateServiceLinkedRole", BATCH_ROLE, {"iam:AWSServiceName": "batch.amazonaws.com"}) in checks


@pytest.mark.parametrize(
    ("params", "exists"),
    [(MANAGED, True), (MANAGED | {"serviceRole": ROLE}, False), (MANAGED | {"type": "UNMANAGED"}, False)],
    ids=["role-exists", "service-role-given", "unmanaged"],
)
def test_no_service_linked_role_is_asked_for_when_it_exists_or_a_role_is_given_or_batch_manages_nothing(
    params: dict[str, Any], exists: bool
) -> None:
    checks = required(
        "batch", "batch", "CreateComputeEnvironment", params, ARNS, lambda _p: (), role_exists=lambda _a: exists
    )
    assert [c.action for c in checks if c.action == "iam:CreateServiceLinkedRole"] == []


def test_a_refusing_value_is_one_the_condition_refuses_for_each_operator() -> None:
    # Given a condition of each kind, and the value a call presented
    for operator, values, presented in [
        ("StringEquals", "batch.amazonaws.com", "batch.amazonaws.com"),
        ("StringLike", "gpupilot-*", "gpupilot-od-1"),
        ("StringNotEquals", "ecs.amazonaws.com", "batch.amazonaws.com"),
        ("StringNotLike", "other-*", "gpupilot-od-1"),
        ("ArnLike", f"arn:aws:iam::{ACCOUNT}:role/gpupilot-*", f"arn:aws:iam::{ACCOUNT}:role/gpupilot-x"),
    ]:
        condition = Condition.parse(operator, "ec2:ResourceTag/owner", values)
        refused = condition.refusing(presented)
        # Then the value is one the condition refuses, where the presented one holds
        assert condition.holds(Request("x", INSTANCE, tags={"owner": presented})), operator
        assert refused is not None and not condition.holds(Request("x", INSTANCE, tags={"owner": refused})), operator
    # And a condition that holds for every value refuses none
    assert Condition.parse("StringLike", "ec2:CreateAction", "*").refusing("CreateLaunchTemplate") is None


def test_a_request_with_a_keys_value_changed_changes_the_resources_tag_or_the_calls_key() -> None:
    request = Request("ec2:CreateTags", INSTANCE, {"ec2:CreateAction": "RunInstances"}, tags={"Gpupilot:Pool": "p"})
    tagged = request.with_value("ec2:ResourceTag/gpupilot:pool", "q")
    assert tagged.tags == {"gpupilot:pool": "q"} and tagged.context == request.context
    keyed = request.with_value("EC2:CreateAction", "CreateLaunchTemplate")
    assert keyed.context == {"EC2:CreateAction": "CreateLaunchTemplate"} and keyed.tags == request.tags
