"""One route table drives the handler, API Gateway and the OpenAPI document; these keep them in step."""

from __future__ import annotations

from functions.api.handler import OPERATIONS
from functions.shared.api.contract import ROUTES
from functions.shared.api.openapi import openapi_document
from gpupilot.openapi import DEFAULT_PATH, render


def test_the_committed_openapi_document_is_the_one_the_code_writes():
    # Regenerate with `make openapi` after changing a route or a model.
    assert DEFAULT_PATH.read_text() == render()


def test_every_route_has_an_operation_in_the_api_handler_and_no_operation_is_unrouted():
    assert {route.operation_id for route in ROUTES} == set(OPERATIONS)


def test_the_document_describes_every_route_with_its_body_response_and_sigv4():
    document = openapi_document()
    for route in ROUTES:
        operation = document["paths"][route.path][route.method.lower()]
        response = operation["responses"][str(route.status)]["content"]["application/json"]["schema"]
        assert response == {"$ref": f"#/components/schemas/{route.response.__name__}"}
        assert operation["security"] == [{"sigv4": []}]
        assert ("requestBody" in operation) == route.json_body
    job_request = document["components"]["schemas"]["JobRequest"]
    assert job_request["properties"]["gpus"]["maximum"] == 8
    assert set(job_request["required"]) == {"name", "image", "command"}
