"""Service Quotas, from the world.

6. Service Quotas: moto knows only VPC quotas; EC2's GPU vCPU quotas are served from the world.

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches

# A world that sets no quota has room for any fleet it simulates.
DEFAULT_VCPU_QUOTA = 4096.0


def world_quotas(
    patches: Patches, quotas: dict[str, int], by_region: Mapping[str, dict[str, int]] | None = None
) -> None:
    """6. GetServiceQuota answers EC2's GPU vCPU quotas (the world's, else a roomy default), each region its own
    (`by_region`: the other regions' quotas; Service Quotas are per account and region)."""
    from moto.servicequotas.models import ServiceQuotasBackend

    from functions.shared.domain.capacity.quotas import QUOTA_NAMES

    original = ServiceQuotasBackend.get_service_quota

    def get_service_quota(self: Any, service_code: str, quota_code: str) -> dict[str, Any]:
        if service_code != "ec2" or quota_code not in QUOTA_NAMES:
            return dict(original(self, service_code, quota_code))
        return {
            "ServiceCode": "ec2",
            "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
            "QuotaArn": f"arn:aws:servicequotas:{self.region_name}:{self.account_id}:ec2/{quota_code}",
            "QuotaCode": quota_code,
            "QuotaName": QUOTA_NAMES[quota_code],
            "Value": float((by_region or {}).get(self.region_name, quotas).get(quota_code, DEFAULT_VCPU_QUOTA)),
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }

    patches.replace(ServiceQuotasBackend, "get_service_quota", get_service_quota)
