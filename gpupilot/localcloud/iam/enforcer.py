"""The enforcer a deployment's clients call before each AWS call: authorizes it against the calling function's
role, refuses it with AccessDenied as AWS would, and logs each decision for the IAM drift check."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import itertools
import json
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from gpupilot.localcloud.dispatch import current_function
from gpupilot.localcloud.iam.actions import Arn, ResourceTags, RoleExists, required
from gpupilot.localcloud.iam.policies import Statement, authorize

CALL_LOG_ENV = "GPUPILOT_AWS_CALL_LOG"


@dataclass(frozen=True)
class Decision:
    function: str
    action: str
    resource: str
    allowed: bool
    site: str
    # Refused on purpose: a test proving what a grant does not allow (the drift check counts no missing grant).
    expected: bool = False
    # The condition keys the request presented, and the resource's tags (None: not known).
    context: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] | None = None
    # Which logged policies decided it (policies-<deployment>.json beside the log).
    deployment: str = ""


_expecting_refusal: contextvars.ContextVar[bool] = contextvars.ContextVar("gpupilot_expecting_refusal", default=False)


@contextlib.contextmanager
def expecting_refusal() -> Iterator[None]:
    """Calls made in this block that IAM refuses are refused on purpose (a test of a grant's limits)."""
    token = _expecting_refusal.set(True)
    try:
        yield
    finally:
        _expecting_refusal.reset(token)


def call_site() -> str:
    """The innermost frame of GPU Pilot's own functions code that made the call. The frames are walked, not extracted:
    `traceback.extract_stack` reads every frame's source line (a stat of each file), and this runs on every call."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if "/functions/" in filename and not filename.endswith("adapters/clients.py"):
            return f"{filename.split('/functions/', 1)[1]}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "unknown"


_enforcers = itertools.count()


class IamEnforcer:
    """A botocore `before-parameter-build` handler: authorizes each call of a function against its role."""

    def __init__(
        self,
        policies: Mapping[str, list[Statement]],
        arn: Arn,
        roles_of_profile: Callable[[str], Sequence[str]] = lambda _profile: (),
        log_dir: Path | None = None,
        resource_tags: ResourceTags = lambda _arn: None,
        role_exists: RoleExists = lambda _arn: True,
    ) -> None:
        self.policies = policies
        self.arn = arn
        self.roles_of_profile = roles_of_profile
        self.resource_tags = resource_tags
        self.role_exists = role_exists
        self.decisions: list[Decision] = []
        self._log = log_dir / f"calls-{os.getpid()}-{next(_enforcers)}.jsonl" if log_dir else None
        self.deployment = self._log_policies(log_dir) if log_dir else ""
        self._seen: set[tuple[Any, ...]] = set()
        self._lock = threading.Lock()

    @classmethod
    def log_dir_from_environment(cls) -> Path | None:
        value = os.environ.get(CALL_LOG_ENV)
        return Path(value) if value else None

    def _log_policies(self, log_dir: Path) -> str:
        """The policies this enforcer decides by, logged once per distinct set (named by their digest)."""
        document = json.dumps(
            {function: [s.as_json() for s in statements] for function, statements in sorted(self.policies.items())},
            sort_keys=True,
        )
        digest = hashlib.sha256(document.encode()).hexdigest()[:16]
        path = log_dir / f"policies-{digest}.json"
        if not path.exists():
            partial = path.with_suffix(f".{os.getpid()}.{id(self)}.tmp")
            partial.write_text(document)
            partial.replace(path)  # whole or absent, whichever process writes it
        return digest

    def __call__(
        self, params: Mapping[str, Any], model: Any, context: Mapping[str, Any] | None = None, **_: Any
    ) -> None:
        function = current_function.get()
        if function is None or function not in self.policies:
            return  # not a deployed function's call (the local cloud's own, or a test's setup)
        service_model = model.service_model
        checks = required(
            service_model.service_name,
            service_model.signing_name,
            model.name,
            params,
            self.arn.in_region((context or {}).get("client_region")),
            self.roles_of_profile,
            self.resource_tags,
            self.role_exists,
        )
        site = call_site()
        for check in checks:
            refusal = authorize(self.policies[function], check)
            expected = refusal is not None and _expecting_refusal.get()
            decision = Decision(
                function, check.action, check.resource, refusal is None, site, expected,
                dict(check.context), None if check.tags is None else dict(check.tags), self.deployment,
            )  # fmt: skip
            self._record(decision)
            if refusal is not None:
                message = (
                    f"{function} is not authorized to perform: {check.action} on resource: {check.resource} "
                    f"{refusal} (called at {site})"
                )
                raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": message}}, model.name)

    def _record(self, decision: Decision) -> None:
        presented = json.dumps([decision.context, decision.tags], sort_keys=True)
        key = (decision.function, decision.action, decision.resource, decision.allowed, decision.expected, presented)
        with self._lock:
            self.decisions.append(decision)
            if self._log is None or key in self._seen:
                return
            self._seen.add(key)
            with self._log.open("a") as log:
                log.write(json.dumps(asdict(decision)) + "\n")


def moto_resource_tags(account: str, region: str) -> ResourceTags:
    """The tags AWS presents for a resource, read from the embedded moto: EC2 instances' (None: not known), in
    whichever region the instance's ARN names (`region`: the home one)."""

    def tags(resource: str) -> Mapping[str, str] | None:
        parts = resource.split(":", 5)
        kind, _, name = parts[-1].partition("/")
        if len(parts) < 6 or parts[2] != "ec2" or parts[4] != account or kind != "instance":
            return None
        from moto.ec2.models import ec2_backends

        return dict(ec2_backends[account][parts[3] or region].tags.get(name, {}))

    return tags


def moto_role_exists(account: str) -> RoleExists:
    """Whether the embedded moto's IAM holds the role of an ARN: its path and name, the name compared without case
    (moto names Batch's service-linked role AWSServiceRoleForbatch where AWS says AWSServiceRoleForBatch)."""

    def exists(role_arn: str) -> bool:
        from moto.iam.models import iam_backends

        partition, resource = role_arn.split(":")[1], role_arn.split(":", 5)[-1]
        path, _, name = resource.removeprefix("role").rpartition("/")
        return any(
            role.path == f"{path}/" and role.name.lower() == name.lower()
            for role in iam_backends[account][partition].get_roles()
        )

    return exists


def enforcer_for(policies: Mapping[str, list[Statement]], profile_roles: Mapping[str, list[str]], region: str,
                 account: str, log_dir: Path | None = None) -> IamEnforcer:  # fmt: skip
    """An enforcer of a local deployment's policies (see deploy.Deployment), reading resource tags and roles from
    moto."""
    from gpupilot.localcloud.template import partition_of

    return IamEnforcer(
        policies,
        Arn(region, account, partition_of(region)),
        lambda profile: profile_roles.get(profile, ()),
        log_dir,
        moto_resource_tags(account, region),
        moto_role_exists(account),
    )
