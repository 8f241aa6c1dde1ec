"""How `make test` shares the tests among its workers (pytest-xdist's `--dist loadfile`): a file's tests on one worker,
so its module fixtures (a local cloud, a scan) are made once; and the infrastructure files together on one worker,
as they share the session's synthesized stack (tests/infra/conftest.py `synthesized`: the app synthesized with its
cdk-nag packs, about ten seconds of CPU), which each worker running one of them would synthesize again."""

from __future__ import annotations

from typing import Any

import pytest

SHARED_SYNTH = "tests/infra/"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own scheduler for the distribution asked
    from xdist.scheduler import LoadFileScheduling

    class SharedSynthScheduling(LoadFileScheduling):  # type: ignore[misc]
        """Files as units of work, the infrastructure files one unit."""

        def _split_scope(self, nodeid: str) -> str:
            scope: str = super()._split_scope(nodeid)
            return SHARED_SYNTH if scope.startswith(SHARED_SYNTH) else scope

    return SharedSynthScheduling(config, log)
