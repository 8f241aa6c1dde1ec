"""Instances and registration: launching EC2 instances for a compute environment (within capacity, offerings
and vCPU quotas; into a Capacity Reservation or Block the job targets or the pool may use), registering
them with ECS as Batch's agent does, terminating them."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from functions.shared.domain.capacity.quotas import vcpu_quota_code
from gpupilot.localcloud.fleet.events import FleetEvents
from gpupilot.localcloud.fleet.records import AMI, BOOT_LINES, SimInstance
from gpupilot.localcloud.reservations import HeldReservation


class FleetInstances(FleetEvents):
    """The EC2 instances and ECS container instances of the fleet."""

    def _launch(self, environment: Any, types: list[str], fleet: list[SimInstance], now: float) -> None:
        """Launch one instance of the first type that some subnet's zone offers, within maxvCpus and quota."""
        resources = environment.compute_resources
        spot = resources.get("type") == "SPOT"
        running_vcpus = sum(i.vcpus for i in fleet if not i.terminated)
        for instance_type in types:
            shape = self._shape(instance_type)
            zone_subnet = self._zone_subnet(resources.get("subnets") or [], instance_type)
            if shape is None or zone_subnet is None:
                continue
            if running_vcpus + shape["VCPU"] > int(resources.get("maxvCpus") or 0):
                return  # at maxvCpus: jobs wait for room (Batch gives no reason)
            if not self._within_quota(instance_type, spot, shape["VCPU"]):
                return  # the account's vCPU quota: no instance launches, and Batch gives no reason
            zone, subnet = zone_subnet
            into = self._reservation_for(resources, spot, instance_type, zone)
            if into is False:
                return  # its reservation cannot take it (not begun, full, over): EC2 refuses the launch
            instance = self._run_instance(environment, instance_type, zone, subnet, spot, shape, now)
            if isinstance(into, HeldReservation):
                self._into_reservation(instance, into, targeted=self._targeted_reservation(resources) is not None)
            fleet.append(instance)
            return

    def _targeted_reservation(self, resources: dict[str, Any]) -> str | None:
        """The Capacity Reservation the compute environment's launch template (the version it names) targets."""
        named = resources.get("launchTemplate") or {}
        if not named.get("launchTemplateName"):
            return None
        try:
            template = self._ec2().get_launch_template_by_name(named["launchTemplateName"])
            version = named.get("version") or "$Default"
            data = (
                template.latest_version()
                if version == "$Latest"
                else template.get_version(template.default_version_number if version == "$Default" else int(version))
            ).data
        except Exception:
            return None
        target = (data.get("CapacityReservationSpecification") or {}).get("CapacityReservationTarget") or {}
        return target.get("CapacityReservationId")

    def _reservation_for(self, resources: dict[str, Any], spot: bool, instance_type: str,
                         zone: str) -> HeldReservation | bool | None:  # fmt: skip
        """The reservation a launch runs in (None: none; False: it targets one that cannot take it now)."""
        if self.reservations is None or spot:
            return None
        targeted = self._targeted_reservation(resources)
        found = self.reservations.launch_into(targeted, instance_type, zone, self.world.region)
        return False if targeted is not None and found is None else found

    def _into_reservation(self, instance: SimInstance, reservation: HeldReservation, targeted: bool) -> None:
        """The instance runs in the reservation: EC2 shows it so (DescribeInstances), and counts it against it."""
        assert self.reservations is not None
        self.reservations.hold(reservation, instance.instance_id)
        instance.reservation = reservation
        ec2_instance = self._ec2().get_instance(instance.instance_id)
        ec2_instance.capacity_reservation_id = reservation.reservation_id
        ec2_instance.capacity_reservation_specification = (
            {"CapacityReservationTarget": {"CapacityReservationId": reservation.reservation_id}}
            if targeted
            else {"CapacityReservationPreference": "open"}
        )
        if reservation.capacity_block:
            ec2_instance.lifecycle = "capacity-block"

    # -- moto's EC2, ECS and Batch ---------------------------------------------------------------
    def _run_instance(
        self,
        environment: Any,
        instance_type: str,
        zone: str,
        subnet: str,
        spot: bool,
        shape: dict[str, int],
        now: float,
    ) -> SimInstance:
        tags = dict((environment.compute_resources or {}).get("tags") or {})
        tags |= {"aws:batch:compute-environment": environment.name}
        reservation = self._ec2().run_instances(
            image_id=AMI,
            count=1,
            user_data=None,
            security_group_names=[],
            instance_type=instance_type,
            subnet_id=subnet,
            tags={"instance": tags},
            is_instance_type_default=False,
        )
        ec2_instance = reservation.instances[0]
        # EC2's LaunchTime (naive UTC, as moto keeps it) on the local cloud's clock, as the sweep ages instances on it.
        ec2_instance.launch_time = self.clock.now().replace(tzinfo=None)
        if spot:
            ec2_instance.lifecycle = "spot"
        index = self._launches.get(instance_type, 0)
        self._launches[instance_type] = index + 1
        bad = self.world.instance(instance_type).bad_hosts
        instance = SimInstance(
            instance_id=ec2_instance.id,
            instance_type=instance_type,
            zone=zone,
            spot=spot,
            vcpus=shape["VCPU"],
            memory_mib=shape["MEMORY"],
            gpus=shape["GPU"],
            launched_at=now,
            idle_since=now,
            symptom=bad.symptom if bad is not None and bad.is_bad(index) else None,
        )
        for line in BOOT_LINES:
            instance.print(line)
        return instance

    def _register(self, instance: SimInstance, gpus: bool) -> None:
        """The ECS agent registers the instance, with its GPUs when ECS_ENABLE_GPU_SUPPORT took effect."""
        environment = next(e for e, fleet in self._instances.items() if instance in fleet)
        found = self._batch().get_compute_environment(environment)
        if found is None:
            return  # its compute environment was deleted meanwhile (and moto terminated its instances)
        cluster = found.ecs_arn
        registered = self._ecs().register_container_instance(cluster, instance.instance_id)
        registered.registered_at = self.clock.now().replace(tzinfo=None)
        resources = [
            _integer("CPU", instance.vcpus * 1024),
            _integer("MEMORY", instance.memory_mib),
        ]
        if gpus:
            gpu_ids = [f"GPU-{uuid.uuid4()}" for _ in range(instance.gpus)]
            resources.append({"name": "GPU", "type": "STRINGSET", "stringSetValue": gpu_ids})
        registered.registered_resources = resources
        registered.remaining_resources = [dict(r) for r in resources]
        instance.container_instance_arn = registered.container_instance_arn
        instance.connected = True
        instance.gpus_registered = gpus and instance.gpus > 0

    def _terminate(self, instance: SimInstance) -> None:
        instance.terminated = True
        if self.reservations is not None and instance.reservation is not None:
            self.reservations.release(instance.instance_id)
        self._ec2().terminate_instances([instance.instance_id])
        if instance.container_instance_arn is not None:
            with contextlib.suppress(Exception):
                self._container_instance(instance).status = "INACTIVE"

    def _container_instance(self, instance: SimInstance) -> Any:
        instance_id = (instance.container_instance_arn or "").rpartition("/")[2]
        for instances in self._ecs().container_instances.values():
            if instance_id in instances:
                return instances[instance_id]
        raise KeyError(instance.container_instance_arn)

    def _zone_subnet(self, subnets: list[str], instance_type: str) -> tuple[str, str] | None:
        """The first of the compute environment's subnets whose zone offers the type, as (zone, subnet)."""
        offered = self.world.offered_zones(instance_type)
        ec2 = self._ec2()
        for subnet_id in subnets:
            zone = ec2.get_subnet(subnet_id).availability_zone
            if zone in offered:
                return zone, subnet_id
        return None

    def _within_quota(self, instance_type: str, spot: bool, vcpus: int) -> bool:
        code = vcpu_quota_code(instance_type, spot)
        limit = self.world.quotas.get(code) if code else None
        if limit is None:
            return True
        in_use = sum(
            i.vcpus
            for fleet in self._instances.values()
            for i in fleet
            if not i.terminated and vcpu_quota_code(i.instance_type, i.spot) == code
        )
        return in_use + vcpus <= limit


def _integer(name: str, value: int) -> dict[str, Any]:
    return {"name": name, "type": "INTEGER", "integerValue": value, "doubleValue": 0.0, "longValue": 0}
