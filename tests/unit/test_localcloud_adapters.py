"""Local cloud adapters: EMF lines to CloudWatch metric data, the handler allow-list, per-thread stdout."""

from __future__ import annotations

import io
import json
import sys
import threading

import pytest
from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

from gpupilot.localcloud.adapters import HandlerDispatcher, ThreadStdout, emf_to_metric_data


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
    dispatcher = HandlerDispatcher()

    # When / Then: the handler is refused before anything is imported or counted
    with pytest.raises(ValueError, match="not a GPU Pilot function"):
        dispatcher.invoke(handler_path, {})
    assert dispatcher.invocations == {}


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
    stdout.release()

    # When writing
    stdout.write("after\n")

    # Then the real stream gets it
    assert (buffer.getvalue(), real.getvalue()) == ("", "after\n")
