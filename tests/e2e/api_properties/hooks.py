"""A check of our own for the property-based API tests: a request the OpenAPI document calls valid is refused
only for what no schema can say.

The document is written from the same pydantic models the API validates with, so a shape the schema accepts
is never a `ValidationError` or a `BadRequest`. What remains are refusals that depend on the deployment or on
the data: no GPU offering can serve the request (`NoCandidate`), a zone or job role this deployment does not
have (`RequestRefused`), a `next_token` this API did not issue, a `from` after `to`, an `Idempotency-Key` used
before with another body (422). schemathesis.toml lets
positive_data_acceptance accept a 400 on the operations that have such refusals; this check holds each 400 to
that list, so the allowance hides nothing else.
"""

from __future__ import annotations

import json

import schemathesis

# (error, field) pairs a schema-valid request may get as a 400 (or, for a reused Idempotency-Key, a 422);
# None: any field.
BUSINESS_REFUSALS = {
    ("NoCandidate", None),
    ("RequestRefused", None),
    ("BadRequest", "next_token"),
    ("BadRequest", "from"),
    ("IdempotencyKeyReused", "Idempotency-Key"),
}

# What the API checks across a field's entries, which JSON Schema cannot say (a total over an array's items or an
# object's values, a name in two objects): (error, field) -> the words of the API's one refusal of that kind. Any
# other refusal of these fields still fails the check.
ACROSS_ENTRIES = {
    ("ValidationError", "command"): "characters in all",
    ("ValidationError", "environment"): "characters in all",
    ("ValidationError", "secrets"): "set in both secrets and environment",
}


@schemathesis.check
def schema_valid_requests_are_refused_only_for_business_reasons(ctx, response, case) -> None:  # type: ignore[no-untyped-def]
    meta = case.meta
    if meta is None or meta.generation.mode.is_negative or response.status_code not in (400, 422):
        return
    try:
        body = json.loads(response.content)
    except ValueError:
        raise AssertionError(
            f"a {response.status_code} without a JSON error body: {response.content[:200]!r}"
        ) from None
    error, field = body.get("error"), body.get("field")
    across = ACROSS_ENTRIES.get((error, field))
    if across is not None and across in str(body.get("message")):
        return
    if (error, None) not in BUSINESS_REFUSALS and (error, field) not in BUSINESS_REFUSALS:
        raise AssertionError(
            f"a request the OpenAPI document calls valid was refused for its shape ({error} on {field}: "
            f"{body.get('message')}): the schema should say what the API checks"
        )
