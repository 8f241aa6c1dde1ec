"""botocore's data files are parsed once per local-cloud process, whatever the number of sessions."""

from __future__ import annotations

from collections.abc import Iterator

import botocore.loaders
import botocore.session
import pytest

from gpupilot.localcloud import botocore_data


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The data files botocore parses from disk, in order. A local cloud started earlier in this process (an
    in-process one of another test) left the data shared: the test starts unshared and leaves it as it found it."""
    was_shared = botocore_data.is_shared()
    botocore_data.unshare()
    parsed: list[str] = []
    original = botocore.loaders.JSONFileLoader.load_file

    def counting(loader: botocore.loaders.JSONFileLoader, file_path: str) -> object:
        parsed.append(file_path)
        return original(loader, file_path)

    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "load_file", counting)
    # A loader of its own per session, as in the local cloud (the test suite otherwise shares one).
    monkeypatch.setattr(botocore.session, "create_loader", botocore.loaders.create_loader)
    yield parsed
    botocore_data.unshare()
    monkeypatch.undo()
    if was_shared:
        botocore_data.share()


def regions_of_three_sessions() -> list[list[str]]:
    return [botocore.session.Session().get_available_regions("ec2") for _ in range(3)]


def test_three_sessions_parse_ec2s_model_once_when_shared(parses: list[str]) -> None:
    # Given the process shares botocore's data files
    botocore_data.share()
    # When three sessions read EC2's regions (as moto's EC2 does as it is imported)
    answers = regions_of_three_sessions()
    # Then each file was parsed once, and every session read the same answer
    assert parses and len(parses) == len(set(parses)), parses
    assert answers[0] == answers[1] == answers[2] and "us-east-1" in answers[0]


def test_without_sharing_each_session_parses_the_files_again(parses: list[str]) -> None:
    # Given sharing undone (botocore's own behaviour)
    botocore_data.share()
    botocore_data.unshare()
    # When three sessions read EC2's regions
    regions_of_three_sessions()
    # Then every file was parsed three times
    assert parses and all(parses.count(path) == 3 for path in parses), parses


def test_sharing_left_by_an_earlier_local_cloud_does_not_hide_the_parses(parses: list[str]) -> None:
    # Given sharing begun, as a local cloud started earlier in the process leaves it, and ended
    botocore_data.share()
    regions_of_three_sessions()
    first = len(parses)
    botocore_data.unshare()
    # When it is begun again and three new sessions read EC2's regions
    botocore_data.share()
    regions_of_three_sessions()
    # Then they parsed each file once more, and no more
    again = parses[first:]
    assert again and len(again) == len(set(again)), again
