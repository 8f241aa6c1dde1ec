"""`gpupilot`: the CLI, one module per command group (jobs, plan, health, costs, reservations, local), the arguments and
the job request they share, the API client and the rendering beside them; main.py builds the parser and
dispatches."""

from gpupilot.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
