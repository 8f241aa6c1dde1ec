"""In-memory fakes of the ports (functions/shared/ports/), for use-case tests without AWS."""

from tests.fakes.job_store import FakeJobStore
from tests.fakes.ports import (
    FakeAvailability,
    FakeBatch,
    FakeCatalog,
    FakeFleet,
    FakeHealthStore,
    FakeMetrics,
    FakeOfferingMemory,
    FakePools,
    FakePoolStates,
    FakePrices,
    FakeQuotas,
    FakeReservations,
    FakeSweeps,
    FakeWorkflow,
    fake_ports,
)

__all__ = [
    "FakeAvailability",
    "FakeBatch",
    "FakeCatalog",
    "FakeFleet",
    "FakeHealthStore",
    "FakeJobStore",
    "FakeMetrics",
    "FakeOfferingMemory",
    "FakePoolStates",
    "FakePools",
    "FakePrices",
    "FakeQuotas",
    "FakeReservations",
    "FakeSweeps",
    "FakeWorkflow",
    "fake_ports",
]
