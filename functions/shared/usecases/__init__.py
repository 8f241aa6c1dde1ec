"""Use cases: one module per thing the control plane does, over the ports (no boto3 here)."""
