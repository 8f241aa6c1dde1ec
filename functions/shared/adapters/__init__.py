"""Adapters: the boto3 implementations of the ports, each next to the IAM actions it needs."""
