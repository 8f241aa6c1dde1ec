"""The local cloud's simulated GPU fleet behind AWS Batch (simulator.py), one module per concern, each a layer
the next extends: records.py (what it holds, Batch's words), events.py (events and job logs), instances.py
(launch, registration, termination), placement.py (jobs placed, run, ended), hosts.py (an instance's life:
registration as it boots, spot reclaims, idle retirement), simulator.py (the threads that tick and deliver)."""

from gpupilot.localcloud.fleet.records import SimInstance, SimJob, Timeline
from gpupilot.localcloud.fleet.simulator import FleetSimulator

__all__ = ["FleetSimulator", "SimInstance", "SimJob", "Timeline"]
