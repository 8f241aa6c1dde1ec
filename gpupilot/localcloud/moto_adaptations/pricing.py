"""The AWS Price List API, which moto lacks.

11. The AWS Price List API: not in moto at all; here GetProducts answers, in the Price List's own shape,
   the on-demand Linux prices of the bundled snapshot of each region (functions/shared/data/prices/; a
   region without one has no products), both to the embedded server (the local cloud) and to in-process
   mocks (tests). Every TERM_MATCH filter is honoured, on the products' attributes, as the API does. As in
   the Price List, a type sold in Capacity Blocks also has a Capacity Block product (`marketoption`
   `CapacityBlock`, operation `RunInstances:CB`) with the same type, region, OS, tenancy and capacity
   status; its hourly rate is not the on-demand price (here: half of it), so a reader that does not ask for
   `marketoption` `OnDemand` prices the type wrong.

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches

PRICE_LIST_TARGET = "AWSPriceListService."


# The families EC2 sells in Capacity Blocks (EC2 User Guide, "How Capacity Blocks work"): the Price List has a
# Capacity Block product of each of their types beside the on-demand one.
CAPACITY_BLOCK_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200")


# A Capacity Block product's hourly rate here: not the on-demand price (Capacity Blocks are priced per offering).
CAPACITY_BLOCK_RATE = 0.5


def price_list_answer(target: str, body: bytes) -> tuple[int, dict[str, str], str]:
    """11. The Price List API's GetProducts over the bundled on-demand snapshots, one per region."""
    import json

    from functions.shared.adapters.prices import snapshot_regions, snapshot_table

    headers = {"Content-Type": "application/x-amz-json-1.1"}
    if not target.endswith(".GetProducts"):
        error = {"__type": "InvalidParameterException", "Message": f"{target} is not served by the local cloud"}
        return 400, headers, json.dumps(error)
    request = json.loads(body or b"{}")
    wanted = {f["Field"]: f["Value"] for f in request.get("Filters", [])}
    regions = [wanted["regionCode"]] if "regionCode" in wanted else snapshot_regions()
    products = []
    for region in regions if request.get("ServiceCode") == "AmazonEC2" else []:
        for instance_type, hourly in sorted(snapshot_table(region).items()):
            offers = [("OnDemand", hourly)]
            if instance_type.split(".")[0] in CAPACITY_BLOCK_FAMILIES:
                offers.append(("CapacityBlock", round(hourly * CAPACITY_BLOCK_RATE, 4)))
            for market, rate in offers:
                product = _price_list_product(region, instance_type, market, rate)
                attributes = product["product"]["attributes"]
                # TERM_MATCH: a product matches when each filtered attribute has exactly that value.
                if all(attributes.get(field) == value for field, value in wanted.items()):
                    products.append(json.dumps(product))
    return 200, headers, json.dumps({"FormatVersion": "aws_v1", "PriceList": products})


def _price_list_product(region: str, instance_type: str, market: str, hourly: float) -> dict[str, Any]:
    """One Linux product of the Price List, sold `OnDemand` or in a `CapacityBlock`, with its on-demand term."""
    import zlib

    from functions.shared.adapters.prices import price_snapshot, snapshot_day

    # Each item carries the day its prices were published, as an ISO 8601 time, as the API's do: the first day the
    # snapshot's date allows (it may be dated by its month).
    as_of = snapshot_day((price_snapshot(region) or {}).get("as_of", "1970-01-01"))
    sku = f"SKU{zlib.crc32(f'{region}/{instance_type}/{market}'.encode()):010d}"
    operation = "RunInstances" if market == "OnDemand" else "RunInstances:CB"
    dimension = {"unit": "Hrs", "pricePerUnit": {"USD": f"{hourly:.10f}"}}
    return {
        "product": {"sku": sku, "productFamily": "Compute Instance", "attributes": {
            "servicecode": "AmazonEC2", "instanceType": instance_type, "regionCode": region,
            "operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
            "licenseModel": "No License required", "instanceFamily": "GPU instance", "marketoption": market,
            "operation": operation}},
        "terms": {"OnDemand": {f"{sku}.JRTCKXETXF": {"priceDimensions": {
            f"{sku}.JRTCKXETXF.6YS6EN2CT7": dimension}, "effectiveDate": f"{as_of}T00:00:00Z"}}},
        "version": as_of.replace("-", "") + "000000", "publicationDate": f"{as_of}T00:00:00Z",
    }  # fmt: skip


def serve_price_list(patches: Patches) -> None:
    """11. GetProducts answered to the embedded server and to in-process mocks alike."""
    from moto.core.botocore_stubber import BotocoreStubber
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original_process = BotocoreStubber.process_request
    original_call = DomainDispatcherApplication.__call__

    def process_request(self: Any, request: Any) -> Any:
        target = request.headers.get("X-Amz-Target") or ""
        if isinstance(target, bytes):
            target = target.decode()
        if target.startswith(PRICE_LIST_TARGET):
            body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
            return price_list_answer(target, body)
        return original_process(self, request)

    def call(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith(PRICE_LIST_TARGET):
            return original_call(self, environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        status, headers, body = price_list_answer(target, environ["wsgi.input"].read(length))
        start_response(f"{status} {'OK' if status == 200 else 'Bad Request'}", list(headers.items()))
        return [body.encode()]

    patches.replace(BotocoreStubber, "process_request", process_request)
    patches.replace(DomainDispatcherApplication, "__call__", call)
