"""Running handlers locally: EMF lines to CloudWatch metric data, the handler allow-list, per-thread stdout,
the function's own environment, and asynchronous invocations that fail into the on-failure destination."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import sys
import threading
import time

import pytest
from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

from functions.shared.adapters.config import settings
from gpupilot.localcloud.dispatch import HandlerDispatcher, LocalFunction, current_function
from gpupilot.localcloud.function_output import ThreadStdout, emf_to_metric_data


@pytest.fixture
def emf_line():
    """One EMF line exactly as Powertools prints it: a dimension, a metric with two values, and one more."""
    metrics = Metrics(namespace="UnitTest", service="svc")
    metrics.add_dimension(name="gpu_model", value="A10G")
    metrics.add_metric(name="JobsSubmitted", unit=MetricUnit.Count, value=2)
    metrics.add_metric(name="JobsSubmitted", unit=MetricUnit.Count, value=3)
    metrics.add_metric(name="CostUsd", unit=MetricUnit.NoUnit, value=0.5)
    try:
        yield json.dumps(metrics.serialize_metric_set())
    finally:
        # Powertools keeps metrics per process: leave none behind for the next test.
        metrics.clear_metrics()


# -- EMF ----------------------------------------------------------------------------------------------
def test_emf_line_becomes_namespace_and_metric_data_with_dimensions_units_and_values(emf_line):
    # Given a Powertools EMF line
    # When converting it
    converted = emf_to_metric_data(emf_line)

    # Then each value becomes one MetricData entry, with the line's dimensions and units
    assert converted is not None
    namespace, data = converted
    dimensions = [{"Name": "gpu_model", "Value": "A10G"}, {"Name": "service", "Value": "svc"}]
    assert namespace == "UnitTest"
    assert data == [
        {"MetricName": "JobsSubmitted", "Dimensions": dimensions, "Value": 2.0, "Unit": "Count"},
        {"MetricName": "JobsSubmitted", "Dimensions": dimensions, "Value": 3.0, "Unit": "Count"},
        {"MetricName": "CostUsd", "Dimensions": dimensions, "Value": 0.5, "Unit": "None"},
    ]


@pytest.mark.parametrize(
    "line",
    [
        "not json at all",
        '{"level": "INFO", "message": "wait already resumed"}',  # a Powertools log line
        "[1, 2, 3]",
        '{"_aws": {"CloudWatchMetrics": []}}',  # EMF envelope without metrics
    ],
)
def test_lines_that_carry_no_emf_metric_give_none(line):
    # Given / When / Then
    assert emf_to_metric_data(line) is None


# -- handler allow-list ---------------------------------------------------------------------------
@pytest.mark.parametrize("handler_path", ["os.system", "subprocess.run", "gpupilot.cli.main", "functionsX.handler"])
def test_dispatcher_refuses_handlers_outside_the_product_functions(monkeypatch, handler_path):
    # Given a dispatcher (it installs a per-thread stdout; monkeypatch puts sys.stdout back afterwards)
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    dispatcher = HandlerDispatcher({"evil": function("evil", handler_path)})

    # When / Then: the handler is refused before anything is imported or counted
    with pytest.raises(ValueError, match="not a GPU Pilot function"):
        dispatcher.invoke("evil", {})
    assert dispatcher.invocations == {}


def function(key: str, handler: str, environment: dict[str, str] | None = None) -> LocalFunction:
    return LocalFunction(
        key=key, name=f"gpupilot-{key}", arn=f"arn:fn:{key}", handler=handler, environment=environment or {}
    )


def observe(event, context):
    """A stand-in handler: what it saw of its environment and its name."""
    return {"table": settings().table_name, "function": current_function.get(), "event": event}


def fail(event, context):
    raise RuntimeError("boom")


def test_each_function_runs_with_its_own_environment_and_name(monkeypatch):
    # Given two functions whose template environments differ, and a process environment that says otherwise
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    monkeypatch.setenv("GPUPILOT_TABLE", "from-the-process")
    here = "functions.api.handler"  # an allowed prefix is needed: point it at this module through a shim
    monkeypatch.setattr("functions.api.handler.observe", observe, raising=False)
    dispatcher = HandlerDispatcher(
        {
            "a": function("a", f"{here}.observe", {"GPUPILOT_TABLE": "table-a"}),
            "b": function("b", f"{here}.observe", {}),
        }
    )

    # When each runs / Then each sees only its own GPU Pilot variables, under its own name
    assert dispatcher.invoke("a", {})[0] == {"table": "table-a", "function": "a", "event": {}}
    assert dispatcher.invoke("b", {})[0]["table"] == "gpupilot"  # the default: b's template sets none


def test_an_asynchronous_invocation_that_keeps_failing_goes_to_the_failure_destination(monkeypatch):
    # Given a handler that always fails, invoked as an event
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    monkeypatch.setattr("functions.api.handler.fail", fail, raising=False)
    failed: list[tuple[str, dict]] = []
    dispatcher = HandlerDispatcher(
        {"f": function("f", "functions.api.handler.fail")},
        failure_sink=lambda fn, record: failed.append((fn.key, record)),
    )

    # When / Then: Lambda's two retries, then the record with the request and the error
    assert dispatcher.invoke_as_event("f", {"x": 1}) is False
    assert dispatcher.invocations["functions.api.handler.fail"] == 3
    [(key, record)] = failed
    assert key == "f" and record["requestPayload"] == {"x": 1}
    assert record["responsePayload"]["errorType"] == "RuntimeError"


def nap(event, context):
    """A stand-in handler that sleeps as product code would: through the time module."""
    time.sleep(event["seconds"])
    return "rested"


def test_the_seconds_a_handler_spends_in_time_sleep_are_counted_per_handler(monkeypatch):
    # Given a dispatcher (it counts time.sleep from now on; monkeypatch puts the real one back afterwards) and a
    # handler that sleeps when asked to
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    monkeypatch.setattr(time, "sleep", time.sleep)
    monkeypatch.setattr("functions.api.handler.nap", nap, raising=False)
    dispatcher = HandlerDispatcher({"f": function("f", "functions.api.handler.nap")})

    # When it runs once without sleeping, twice sleeping 50 ms, and a sleep happens outside any invocation
    for seconds in (0, 0.05, 0.05):
        assert dispatcher.invoke("f", {"seconds": seconds}) == ("rested", False)
    time.sleep(0.01)

    # Then the two invocations that slept are counted, with at least the time they asked for, and nothing else is
    assert dispatcher.sleeping_invocations == {"functions.api.handler.nap": 2}
    assert dispatcher.asleep_seconds["functions.api.handler.nap"] >= 0.1
    assert set(dispatcher.asleep_seconds) == {"functions.api.handler.nap"}


# -- ThreadStdout ---------------------------------------------------------------------------------
def test_thread_stdout_captures_only_the_capturing_threads_writes():
    # Given a per-thread stdout whose main thread captures
    real = io.StringIO()
    stdout = ThreadStdout(real)
    buffer = stdout.capture()

    # When this thread and another thread both write
    stdout.write("from the handler\n")
    other = threading.Thread(target=stdout.write, args=("from another thread\n",))
    other.start()
    other.join()

    # Then the capture holds only this thread's line and the real stream the other's
    assert buffer.getvalue() == "from the handler\n"
    assert real.getvalue() == "from another thread\n"


def test_thread_stdout_writes_to_the_real_stream_after_release():
    # Given a capture that was released
    real = io.StringIO()
    stdout = ThreadStdout(real)
    buffer = stdout.capture()
    stdout.release(buffer)

    # When writing
    stdout.write("after\n")

    # Then the real stream gets it
    assert (buffer.getvalue(), real.getvalue()) == ("", "after\n")


def test_thread_stdout_captures_nest_and_give_the_outer_capture_back():
    # Given an invocation's capture, and an inner one in the same thread
    real = io.StringIO()
    stdout = ThreadStdout(real)
    outer = stdout.capture()
    stdout.write("outer before\n")
    inner = stdout.capture()
    stdout.write("inner\n")

    # When the inner one ends and the outer writes on
    stdout.release(inner)
    stdout.write("outer after\n")
    stdout.release(outer)

    # Then each capture holds its own lines and nothing reached the real stream
    assert (outer.getvalue(), inner.getvalue(), real.getvalue()) == ("outer before\nouter after\n", "inner\n", "")


def log_a_warning(event, context):
    from functions.shared.observability import logger

    logger.warning("a function's log line")
    return {}


def test_a_functions_log_lines_go_to_the_log_file_even_if_its_logger_was_made_before_the_local_cloud(
    monkeypatch, tmp_path
):
    # Given the functions' Logger writing to the process's stream (it was made before the per-thread stdout)
    from functions.shared.observability import logger

    console = io.StringIO()
    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    monkeypatch.setattr(handler, "stream", console)
    monkeypatch.setattr("functions.api.handler.log_a_warning", log_a_warning, raising=False)
    log_file = tmp_path / "functions.log"
    dispatcher = HandlerDispatcher({"f": function("f", "functions.api.handler.log_a_warning")}, log_file=log_file)

    # When the function logs
    dispatcher.invoke("f", {})

    # Then the line is in the log file, not on the console
    assert "a function's log line" in log_file.read_text()
    assert console.getvalue() == ""


def remaining(event, context):
    """A stand-in handler: the time its context says it has left."""
    return context.get_remaining_time_in_millis()


def test_a_handler_s_context_counts_down_from_its_function_s_timeout(monkeypatch):
    # Given a function the template gives 28 seconds (the api's: API Gateway gives up at 29)
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    monkeypatch.setattr("functions.api.handler.remaining", remaining, raising=False)
    api = dataclasses.replace(function("api", "functions.api.handler.remaining"), timeout_seconds=28)

    # When it runs / Then what it has left is what Lambda would say: at most its timeout (Powertools' idempotency
    # frees a key held by a call in progress once that call would have timed out)
    left, errored = HandlerDispatcher({"api": api}).invoke("api", {})
    assert not errored and 20_000 < left <= 28_000
