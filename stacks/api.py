"""The REST API: every route IAM-authenticated (SigV4) and proxied to the api Lambda."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from functions.shared.api.contract import ROUTES
from functions.shared.api.openapi import openapi_document
from stacks.nag import Kind, acknowledge, acknowledge_checkov
from stacks.settings import API_STAGE_NAME, API_THROTTLE_BURST, API_THROTTLE_RATE, LOG_RETENTION


# The gateway refuses, before the Lambda runs, what its validator's message can name: a body that is not an
# object, a missing required field, a field the model does not have. It names them in its message only (its
# validator gives no path), so types, ranges and patterns stay with the api Lambda, whose 4xx bodies name the
# offending field; the local cloud (no API Gateway) answers those exactly like the deployed stack.
def edge_body_schema(openapi: dict[str, Any], model: str) -> dict[str, Any]:
    """The gateway's JSON schema (draft 4) for a request body: the OpenAPI model's fields, required and allowed."""
    schema = openapi["components"]["schemas"][model]
    return {
        "title": model,
        "type": "object",
        "required": list(schema.get("required", [])),
        "properties": {name: {} for name in schema["properties"]},
        "additionalProperties": schema.get("additionalProperties", True),
    }


def _json_schema(edge: dict[str, Any]) -> apigw.JsonSchema:
    return apigw.JsonSchema(
        schema=apigw.JsonSchemaVersion.DRAFT4,
        title=edge["title"],
        type=apigw.JsonSchemaType.OBJECT,
        required=edge["required"],
        properties={name: apigw.JsonSchema() for name in edge["properties"]},
        additional_properties=edge["additionalProperties"],
    )


def body_refusal_message(openapi: dict[str, Any], models: list[str]) -> str:
    """What a body the gateway refuses must be, from the same OpenAPI models its validator checks."""
    needs = [
        f"{model} needs {', '.join(edge_body_schema(openapi, model)['required']) or 'no field'} and takes no "
        "field it does not define"
        for model in models
    ]
    return "Invalid request body: a JSON object is required; " + "; ".join(needs)


# API Gateway's own refusals (no signature, an unknown route, a body its model refuses, throttling) in the API's
# error shape, as JSON: `error` is API Gateway's response type (ACCESS_DENIED, BAD_REQUEST_BODY, THROTTLED...).
# A gateway response template is not run by VTL: API Gateway only substitutes its $context variables, so no
# escaping helper ($util.escapeJavaScript) is there. $context.error.messageString arrives quoted and escaped as
# a JSON string; $context.error.validationErrorString arrives as it is, with the double quotes its validator
# puts around property names, and would break the JSON, so no template uses it: a refused body is answered
# with what the body must be, said at synthesis from the same model.
GATEWAY_ERROR_TEMPLATE = (
    '{"error": "$context.error.responseType", "field": null, "message": $context.error.messageString}'
)


def body_error_template(message: str) -> str:
    return '{"error": "$context.error.responseType", "field": "body", "message": ' + json.dumps(message) + "}"


class Api(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, handler: lambda_.IFunction, retain_cloudwatch_role: bool
    ) -> None:
        super().__init__(scope, construct_id)
        access_logs = logs.LogGroup(self, "AccessLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)
        acknowledge_checkov(access_logs, Kind.LOG_GROUP)
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            description="GPU Pilot: submit, inspect, cancel and plan GPU jobs",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Execution logging needs API Gateway's account-level CloudWatch role. It is one setting for every
            # API in the account and region: deleting GPU Pilot must not take it from the others, so it is
            # retained. Context api_gateway_cloudwatch_role: false leaves the account's existing role alone.
            cloud_watch_role=retain_cloudwatch_role,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN if retain_cloudwatch_role else None,
            default_method_options=apigw.MethodOptions(authorization_type=apigw.AuthorizationType.IAM),
            deploy_options=apigw.StageOptions(
                stage_name=API_STAGE_NAME,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                tracing_enabled=True,
                logging_level=apigw.MethodLoggingLevel.INFO,
                # Request bodies carry job environments, which may hold secrets: never log them.
                data_trace_enabled=False,
                metrics_enabled=True,
                throttling_rate_limit=API_THROTTLE_RATE,
                throttling_burst_limit=API_THROTTLE_BURST,
            ),
        )
        validator = self.rest_api.add_request_validator(
            "BodyValidator", validate_request_body=True, validate_request_parameters=True
        )
        openapi = openapi_document()
        bodies = sorted({route.body.__name__ for route in ROUTES if route.body})
        models = {
            name: self.rest_api.add_model(
                name,
                content_type="application/json",
                schema=_json_schema(edge_body_schema(openapi, name)),
            )
            for name in bodies
        }
        gateway_responses = {
            apigw.ResponseType.BAD_REQUEST_BODY: body_error_template(body_refusal_message(openapi, bodies)),
            apigw.ResponseType.DEFAULT_4_XX: GATEWAY_ERROR_TEMPLATE,
            apigw.ResponseType.DEFAULT_5_XX: GATEWAY_ERROR_TEMPLATE,
        }
        for response_type, template in gateway_responses.items():
            self.rest_api.add_gateway_response(
                response_type.response_type,
                type=response_type,
                templates={"application/json": template},
                response_headers={"Content-Type": "'application/json'"},
            )
        # One integration for all routes; the api Lambda routes by resource and method itself.
        integration = apigw.LambdaIntegration(handler, proxy=True, allow_test_invoke=False)
        for route in ROUTES:
            resource = self.rest_api.root.resource_for_path(route.path)
            resource.add_method(
                route.method,
                integration,
                authorization_type=apigw.AuthorizationType.IAM,
                request_validator=validator,
                request_models={"application/json": models[route.body.__name__]} if route.body else None,
            )

        acknowledge(
            self.rest_api,
            "AwsSolutions-COG4",
            "Callers are AWS principals (the gpupilot CLI and automation signing with SigV4): every method "
            "uses AWS_IAM authorization, so there is no Cognito user pool to authorize against.",
        )
        if retain_cloudwatch_role:
            acknowledge(
                self.rest_api,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs]",
                "API Gateway's account-level logging role: this AWS-maintained policy is the documented way to "
                "let API Gateway write execution logs, and it is attached to that service role only.",
            )
        acknowledge(
            self.rest_api.deployment_stage,
            "AwsSolutions-APIG3",
            "Every method requires SigV4 (AWS_IAM), so unsigned requests are refused before they reach "
            "the Lambda, and stage throttling caps signed callers; no WAF rule would apply to "
            "authenticated AWS principals that these two do not already cover.",
        )
        acknowledge_checkov(self.rest_api.deployment_stage, Kind.API_STAGE)
        # The stack exports the URL as ApiUrl; RestApi's own duplicate output would only add noise.
        self.rest_api.node.try_remove_child("Endpoint")
        self.url = self.rest_api.url
