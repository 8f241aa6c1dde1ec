"""The world file of the local cloud: defaults, and errors that name the field or the file."""

from __future__ import annotations

import json

import pytest

from gpupilot.localcloud.world import WorldError, load_world


def write_world(tmp_path, content: object) -> str:
    path = tmp_path / "world.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_no_world_file_gives_the_default_world():
    # Given / When
    world = load_world(None)

    # Then
    assert (world.region, world.zones) == ("us-east-1", ["us-east-1a", "us-east-1b"])
    assert (world.jobs.runtime_seconds, world.jobs.exit_code) == (2, 0)
    default_type = world.instance("g5.xlarge")
    assert (default_type.offered, default_type.capacity, default_type.ecs_agent) == (True, "available", "registers")


def test_world_file_values_are_loaded(tmp_path):
    # Given a world where g5.xlarge has no capacity
    path = write_world(tmp_path, {"instance_types": {"g5.xlarge": {"capacity": "none"}}, "jobs": {"exit_code": 3}})

    # When
    world = load_world(path)

    # Then
    assert world.instance("g5.xlarge").capacity == "none"
    assert world.jobs.exit_code == 3


def test_unknown_key_raises_world_error_naming_its_path_in_the_file(tmp_path):
    # Given a typo in a nested key
    path = write_world(tmp_path, {"instance_types": {"g5.xlarge": {"capacityy": "none"}}})

    # When / Then: the message names the file and the dotted field
    with pytest.raises(WorldError) as raised:
        load_world(path)
    assert str(raised.value).startswith(f"world file {path}: instance_types.g5.xlarge.capacityy: ")


def test_value_out_of_range_raises_world_error_naming_the_field(tmp_path):
    # Given an exit code above 255
    path = write_world(tmp_path, {"jobs": {"exit_code": 300}})

    # When / Then
    with pytest.raises(WorldError, match=r"jobs\.exit_code"):
        load_world(path)


def test_bad_json_raises_world_error_naming_the_file(tmp_path):
    # Given a file that is not JSON
    path = write_world(tmp_path, "{region: us-east-1")

    # When / Then
    with pytest.raises(WorldError) as raised:
        load_world(path)
    assert str(raised.value).startswith(f"world file {path} is not valid JSON")


def test_missing_world_file_raises_world_error_naming_the_file(tmp_path):
    # Given / When / Then
    missing = tmp_path / "absent.json"
    with pytest.raises(WorldError, match=f"cannot read world file {missing}"):
        load_world(missing)


def test_a_made_up_region_is_an_error_listing_the_valid_ones(tmp_path):
    path = tmp_path / "world.json"
    path.write_text('{"region": "mars-1", "zones": ["mars-1a"]}')
    with pytest.raises(WorldError, match=r"region: .*unknown region 'mars-1'; valid: .*us-east-1"):
        load_world(path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"bogus": 1}, "bogus: unknown key; valid: region, zones, instance_types, spot, quotas, regions, jobs, faults"),
        (
            {"instance_types": {"g6.xlarge": {"colour": "red"}}},
            "instance_types.g6.xlarge.colour: unknown key; valid: sold, offered, zones, capacity, ecs_agent, "
            "gpu_registration, compute_environment_invalid",
        ),
        ({"spot": {"g6.xlarge": {"price": 1}}}, "spot.g6.xlarge.price: unknown key; valid: capacity, placement_score"),
        ({"faults": {"events": {"dropp": 1}}}, "faults.events.dropp: unknown key; valid: drop, duplicate, reorder"),
    ],
)
def test_an_unknown_key_is_an_error_listing_the_valid_ones_where_it_sits(tmp_path, content, expected):
    with pytest.raises(WorldError) as raised:
        load_world(write_world(tmp_path, content))
    assert expected in str(raised.value)


def test_the_world_checks_messages_read_without_pydantic_prefixes(tmp_path):
    path = write_world(tmp_path, {"instance_types": {"g9.xlarge": {}}})
    with pytest.raises(WorldError) as raised:
        load_world(path)
    assert str(raised.value).startswith(f"world file {path}: instance_types: unknown GPU type g9.xlarge; valid: ")
    assert "Value error" not in str(raised.value)


def test_the_p5_spot_quota_is_a_quota_a_world_may_set(tmp_path):
    # Given a world with no spot P5 vCPUs / When loaded / Then the code is taken as a vCPU quota
    world = load_world(write_world(tmp_path, {"quotas": {"L-C4BD4855": 0, "L-7212CCBC": 96}}))
    assert world.quotas == {"L-C4BD4855": 0, "L-7212CCBC": 96}


def test_an_unknown_quota_code_is_an_error_listing_the_valid_ones(tmp_path):
    with pytest.raises(WorldError) as raised:
        load_world(write_world(tmp_path, {"quotas": {"L-00000000": 0}}))
    assert "quotas: unknown code L-00000000; valid: " in str(raised.value)
    assert "L-C4BD4855" in str(raised.value)


def test_a_world_can_make_aws_refuse_a_market_signal_call(tmp_path):
    refuse = {"GetSpotPlacementScores": "UnauthorizedOperation", "GetServiceQuota": "AccessDeniedException"}
    world = load_world(write_world(tmp_path, {"faults": {"refuse": refuse}}))
    assert world.faults.refuse == refuse


@pytest.mark.parametrize(
    ("refuse", "expected"),
    [
        (
            {"RunInstances": "UnauthorizedOperation"},
            "faults: refuse: unknown operation 'RunInstances'; valid: GetSpotPlacementScores, "
            "DescribeSpotPriceHistory, GetServiceQuota, GetProducts",
        ),
        (
            {"GetSpotPlacementScores": "AccessDeniedException"},
            "faults: refuse.GetSpotPlacementScores: unknown error 'AccessDeniedException'; valid: "
            "UnauthorizedOperation, MaxConfigLimitExceeded, RequestLimitExceeded",
        ),
    ],
)
def test_a_refusal_aws_does_not_make_is_an_error_listing_the_valid_ones(tmp_path, refuse, expected):
    with pytest.raises(WorldError) as raised:
        load_world(write_world(tmp_path, {"faults": {"refuse": refuse}}))
    assert expected in str(raised.value)


def test_a_reservation_in_a_zone_the_world_lacks_raises_world_error_naming_it(tmp_path):
    # Given a reservation in a zone that is not the world's
    path = write_world(tmp_path, {"capacity_reservations": [{"instance_type": "g5.xlarge", "zone": "us-east-1f"}]})

    # When / Then: the message names the reservation's field
    with pytest.raises(WorldError, match=r"capacity_reservations\.0\.zone: 'us-east-1f' not in the world's zones"):
        load_world(path)


def test_a_reservation_in_a_region_the_world_lacks_raises_world_error_naming_it(tmp_path):
    reservation = {"instance_type": "g5.xlarge", "zone": "us-east-1a", "region": "us-west-2"}
    path = write_world(tmp_path, {"capacity_reservations": [reservation]})

    with pytest.raises(WorldError, match=r"capacity_reservations\.0\.region: 'us-west-2' is not a region"):
        load_world(path)


def test_a_reservation_in_a_capacity_region_is_held_in_that_regions_zones(tmp_path):
    # Given a world with us-west-2, and reservations there: one in its zone, one in a home zone
    regions = {"us-west-2": {"zones": ["us-west-2a"]}}
    there = {"instance_type": "g5.xlarge", "zone": "us-west-2a", "region": "us-west-2"}
    astray = {"instance_type": "g5.xlarge", "zone": "us-east-1a", "region": "us-west-2"}

    # Then the first is the world's, in us-west-2; the second names the zone that is not that region's
    [held] = load_world(
        write_world(tmp_path, {"regions": regions, "capacity_reservations": [there]})
    ).capacity_reservations
    assert held.region == "us-west-2"
    with pytest.raises(
        WorldError, match=r"capacity_reservations\.0\.zone: 'us-east-1a' not in the world's zones \(us-west-2a\)"
    ):
        load_world(write_world(tmp_path, {"regions": regions, "capacity_reservations": [astray]}))


def test_a_capacity_block_is_targeted_as_ec2_delivers_it(tmp_path):
    # Given a Capacity Block the world does not say the match criteria of
    path = write_world(tmp_path, {"capacity_reservations": [
        {"instance_type": "g5.xlarge", "zone": "us-east-1a", "capacity_block": True}]})  # fmt: skip

    # Then it is targeted ("Capacity Blocks are delivered as targeted Capacity Reservations")
    assert load_world(path).capacity_reservations[0].match == "targeted"


def test_bad_hosts_are_a_share_of_a_types_launches_chosen_repeatably_by_the_seed(tmp_path):
    # Given a quarter of g4dn.xlarge's instances bad, seed 1
    path = write_world(tmp_path, {"instance_types": {"g4dn.xlarge": {"bad_hosts": {"share": 0.25,
                                  "symptom": "no_gpu_visible", "seed": 1}}}})  # fmt: skip

    # When / Then: exactly one in every four launches, the same ones every run
    bad = load_world(path).instance("g4dn.xlarge").bad_hosts
    assert bad is not None and bad.symptom == "no_gpu_visible"
    chosen = [index for index in range(12) if bad.is_bad(index)]
    assert len(chosen) == 3 and all(len([i for i in chosen if 4 * k <= i < 4 * k + 4]) == 1 for k in range(3))
    assert chosen == [index for index in range(12) if load_world(path).instance("g4dn.xlarge").bad_hosts.is_bad(index)]


@pytest.mark.parametrize(
    ("bad_hosts", "expected"),
    [
        ({"share": 0.25, "symptom": "melts"}, "instance_types.g4dn.xlarge.bad_hosts.symptom: Input should be"),
        ({"share": 1.5, "symptom": "cuda_error"}, "instance_types.g4dn.xlarge.bad_hosts.share: Input should be"),
        ({"symptom": "cuda_error"}, "instance_types.g4dn.xlarge.bad_hosts.share: Field required"),
    ],
)
def test_a_bad_hosts_value_the_simulator_cannot_play_is_an_error_naming_it(tmp_path, bad_hosts, expected):
    path = write_world(tmp_path, {"instance_types": {"g4dn.xlarge": {"bad_hosts": bad_hosts}}})
    with pytest.raises(WorldError, match=expected.replace(".", r"\.")):
        load_world(path)


def test_a_world_region_is_seen_from_inside_with_its_own_zones_types_quotas_and_spot(tmp_path):
    # Given a world whose us-west-2 has its own zones, a type without capacity, a quota and a spot price
    west = {"zones": ["us-west-2a", "us-west-2b"], "instance_types": {"g5.xlarge": {"capacity": "none"}},
            "quotas": {"L-DB2E81BA": 8}, "spot": {"g5.xlarge": {"hourly_usd": 0.5}}}  # fmt: skip
    world = load_world(write_world(tmp_path, {"regions": {"us-west-2": west}, "quotas": {"L-DB2E81BA": 64}}))
    # When seen from us-west-2 / Then it is that region's, and home keeps the top-level keys
    seen = world.in_region("us-west-2")
    assert (seen.region, seen.zones, seen.quotas) == ("us-west-2", ["us-west-2a", "us-west-2b"], {"L-DB2E81BA": 8})
    assert seen.instance("g5.xlarge").capacity == "none" and world.instance("g5.xlarge").capacity != "none"
    assert world.all_regions == ["us-east-1", "us-west-2"] and world.in_region("us-east-1") is world


@pytest.mark.parametrize(
    ("regions", "expected"),
    [
        ({"mars-1": {"zones": ["mars-1a"]}}, "regions: unknown region 'mars-1'; valid: "),
        ({"us-east-1": {"zones": ["us-east-1a"]}}, "regions.us-east-1: the home region is described by the top-level"),
        ({"us-west-2": {"zones": ["eu-west-1a"]}}, "regions.us-west-2.zones: eu-west-1a not in region us-west-2"),
        ({"us-west-2": {"zones": ["us-west-2a"], "quotas": {"L-0": 1}}}, "regions.us-west-2.quotas: unknown code L-0;"),
        ({"us-west-2": {"zones": ["us-west-2a"], "instance_types": {"g9.xlarge": {}}}},
         "regions.us-west-2.instance_types: unknown GPU type g9.xlarge;"),
        ({"us-west-2": {"zones": ["us-west-2a"], "colour": "blue"}}, "colour"),
    ],
)  # fmt: skip
def test_a_bad_world_region_is_an_error_naming_where_it_sits(tmp_path, regions, expected):
    with pytest.raises(WorldError) as raised:
        load_world(write_world(tmp_path, {"regions": regions}))
    assert expected in str(raised.value)


def test_a_capacity_region_without_zones_takes_the_same_default_as_the_home_region(tmp_path):
    # Given a world whose home region and capacity region both leave their zones out (us-west-1 has no "c"; moto, as
    # EC2, names ap-northeast-1's zones a, c, d)
    world = load_world(write_world(tmp_path, {"region": "ap-northeast-1", "regions": {"us-west-1": {}}}))

    # Then each takes its first two zones
    assert world.zones == ["ap-northeast-1a", "ap-northeast-1c"]
    assert world.in_region("us-west-1").zones == ["us-west-1a", "us-west-1b"]


def test_a_type_a_region_does_not_sell_is_offered_in_none_of_its_zones(tmp_path):
    world = load_world(write_world(tmp_path, {"instance_types": {"g6e.xlarge": {"sold": False}}}))

    assert (world.offered_zones("g6e.xlarge"), world.unsold()) == ([], {"g6e.xlarge"})


def test_a_jobs_gpu_utilization_given_as_steps_is_the_last_step_begun_at_each_second(tmp_path):
    # Given jobs busy for their first 60 simulated seconds, then at 2%
    path = write_world(tmp_path, {"jobs": {"gpu_utilization": [[60, 0.02], [0, 0.9]], "checkpoint_every_seconds": 30}})

    # When
    jobs = load_world(path).jobs

    # Then each second reads the step begun by then, whatever their order in the file
    assert [jobs.utilization_at(s) for s in (0, 59.9, 60, 3600)] == [0.9, 0.9, 0.02, 0.02]
    assert jobs.checkpoint_every_seconds == 30


@pytest.mark.parametrize("utilization", [1.5, [[0, -0.1]], [[-1, 0.5]], []])
def test_a_jobs_gpu_utilization_outside_0_to_1_is_an_error_naming_the_field(tmp_path, utilization):
    # Given a utilisation that is no share of a GPU's time
    path = write_world(tmp_path, {"jobs": {"gpu_utilization": utilization}})

    # When / Then
    with pytest.raises(WorldError, match=r"jobs\.gpu_utilization"):
        load_world(path)
