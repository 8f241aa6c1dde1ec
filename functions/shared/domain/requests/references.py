"""What a job request refers to, by the grammar each reference must follow: image references, environment
variable names and values, secret and role ARNs. Pure patterns, shared by the request's validators and the JSON
schema the OpenAPI document is written from (schema_keywords adds them to it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# A variable name that every shell and runtime reads as one: letters, digits and '_', not starting with a digit
# (POSIX's portable names, lower case allowed). The container's environment is "NAME=value" strings, so a name
# with '=' would set another variable.
ENVIRONMENT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
# A process's environment is NUL-terminated strings: a value holds any text but NUL.
ENVIRONMENT_VALUE = re.compile(r"^[^\x00]*$")
# Batch's container `secrets`: a Secrets Manager secret (optionally :json-key:version-stage:version-id) or an
# SSM parameter, by full ARN, so the execution role's grant can be checked against it.
SECRET_ARN = re.compile(
    r"^arn:aws[a-z-]*:(secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+(:[^:]*){0,3}"
    r"|ssm:[a-z0-9-]+:\d{12}:parameter/[A-Za-z0-9/_.-]+)$"
)
# An EC2 Capacity Reservation id (cr- and 17 hexadecimal digits; older ones 8): a request's `reservation`.
RESERVATION_ID = r"^cr-[0-9a-f]{8,17}$"
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$")

# An image reference by Docker's grammar (github.com/distribution/reference, regexp.go, ReferenceRegexp):
#   reference := name [":" tag] ["@" digest]        name := [domain "/"] path-component ["/" path-component]*
#   domain := domain-component ["." domain-component]* [":" port-number]
#   path-component := [a-z0-9]+ [separator [a-z0-9]+]*   (separator: ".", "_", "__" or one or more "-")
#   tag := [\w][\w.-]{0,127}                            digest := algorithm ":" [[:xdigit:]]{32,}
# Go's \w is ASCII and Python's is not, so classes are spelt out. Its IPv6 registries ("[::1]:5000/x") are
# left out: Batch (and ECS) allow an image letters, digits, '-', '_', ':', '.', '/' and '#' (and '@' before a
# digest), no brackets.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_REFERENCE = re.compile(rf"^(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::{_TAG})?(?:@{_DIGEST})?$")
# An AWS region's name, e.g. us-east-1, eu-central-1, us-gov-west-1.
REGION_NAME = r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$"


def schema_keywords(**extra: Any) -> Callable[[dict[str, Any]], None]:
    """Add keywords to a field's JSON schema (to its string branch, for an optional string)."""

    def add(schema: dict[str, Any]) -> None:
        for branch in schema.get("anyOf") or [schema]:
            if branch.get("type") != "null":
                branch.update(extra)

    return add
