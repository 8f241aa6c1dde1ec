"""GPU Pilot's Lambda functions: a package per handler, their shared code in `shared`."""

from functions.shared.coldstart import pause_collector

# The first code of ours a cold start runs: in Lambda, the collector waits for the first invocation's end.
pause_collector()
