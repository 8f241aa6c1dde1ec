"""The fault bench can fail: without the sweep's reconciliation, dropped events lose the jobs' records."""

from __future__ import annotations

import pytest

from bench import faults
from tests.e2e.faults.drive import RESUMED

pytestmark = pytest.mark.bench
JOBS = 2


def test_records_are_lost_when_the_sweep_no_longer_reconciles_them_with_batch() -> None:
    # Given every Batch event dropped, two jobs, and the sweep as it is / a sweep that never reconciles
    reconciled, _, _ = faults.in_own_process("events", jobs=JOBS, timeout=60)
    unreconciled, _, _ = faults.in_own_process("events", jobs=JOBS, timeout=15, reconcile=False)
    # Then with reconciliation every job ends with a record Batch agrees with, its waits resumed (the jobs' start
    # wait outlasts the run: no diagnosis stood in for the sweep); without it, Batch ends every job while its record
    # never learns (well past the time the reconciled jobs took)
    assert reconciled["accepted"] == JOBS and not reconciled["lost"] and not reconciled["not_terminal"], reconciled
    assert reconciled["finished_by"] == {RESUMED: JOBS}, reconciled
    assert len(unreconciled["lost"]) == unreconciled["accepted"] == JOBS, unreconciled
