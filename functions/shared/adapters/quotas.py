"""Service Quotas: the account's EC2 vCPU quotas (a quota of 0 is why a new account's GPU job never starts).

IAM: servicequotas:GetServiceQuota, scoped to EC2's quotas. A quota AWS will not tell (AccessDenied, throttling
past botocore's retries) is SignalUnavailable, never a rejection: selection goes on without it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from functions.shared.adapters.base import ClientAdapter, signal_unavailable
from functions.shared.domain.capacity.quotas import QUOTA_NAMES, QuotaState

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("servicequotas:GetServiceQuota",)
TTL_SECONDS = 600


class ServiceQuotas(ClientAdapter):
    """Implements ports.Quotas, cached for ten minutes per process."""

    service = "service-quotas"
    hint = True  # a plan goes on without a quota it cannot read

    def __init__(self, service_quotas: Any | None = None, region: str | None = None) -> None:
        super().__init__(service_quotas, region)
        self._cache: dict[str, tuple[float, QuotaState | None]] = {}
        self._lock = threading.Lock()

    def vcpu_quota(self, code: str) -> QuotaState | None:
        with self._lock:
            cached = self._cache.get(code)
            if cached is not None and time.monotonic() - cached[0] < TTL_SECONDS:
                return cached[1]
        try:
            quota = self._aws.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]
            found: QuotaState | None = QuotaState(
                code=code, name=str(quota.get("QuotaName") or QUOTA_NAMES.get(code, code)), vcpus=float(quota["Value"])
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "NoSuchResourceException":
                raise signal_unavailable("GetServiceQuota", error) from error
            found = None
        except BotoCoreError as error:  # no answer at all (connection, time-out)
            raise signal_unavailable("GetServiceQuota", error) from error
        with self._lock:
            self._cache[code] = (time.monotonic(), found)
        return found
