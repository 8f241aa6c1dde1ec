"""`gpupilot serve`'s console shows the product: server logs go to the log file, a problem is one line on
stderr, a client that hung up is nothing; --verbose shows it all."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpupilot.localcloud.logging_setup import CHATTY_LOGGERS, LOCAL_LOGGER, _log_request_error, configure_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    names = ["", LOCAL_LOGGER, *CHATTY_LOGGERS]
    saved = {
        name: (logging.getLogger(name).handlers[:], logging.getLogger(name).level, logging.getLogger(name).propagate)
        for name in names
    }
    hook = threading.excepthook
    yield
    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        for handler in logger.handlers:
            if handler not in handlers:
                handler.close()
        logger.handlers, logger.level, logger.propagate = handlers, level, propagate
    threading.excepthook = hook
    logging.captureWarnings(False)


def fail_with(error: BaseException) -> None:
    """What the local API's request handler does when answering fails."""
    try:
        raise error
    except BaseException:
        logging.getLogger(LOCAL_LOGGER).exception("local API request failed: POST /jobs")


def test_a_client_that_hung_up_shows_nothing_on_the_console_and_is_in_the_log_file(tmp_path: Path, capsys) -> None:
    # Given the quiet default
    log_file = tmp_path / "cloud.log"
    configure_logging(log_file)

    # When answering fails because the client went away, in the handler and in the server
    fail_with(ConnectionResetError(104, "Connection reset by peer"))
    try:
        raise BrokenPipeError(32, "Broken pipe")
    except BrokenPipeError:
        _log_request_error(None, ("127.0.0.1", 5555))

    # Then the console shows nothing, and the log file keeps the handler's record with its traceback
    assert capsys.readouterr().err == ""
    logged = log_file.read_text()
    assert "local API request failed" in logged and "ConnectionResetError" in logged


def test_a_failed_request_is_one_line_on_the_console_and_its_traceback_in_the_log_file(tmp_path: Path, capsys) -> None:
    log_file = tmp_path / "cloud.log"
    configure_logging(log_file)

    fail_with(ValueError("boom"))
    try:
        raise KeyError("body")
    except KeyError:
        _log_request_error(None, ("127.0.0.1", 5555))

    assert capsys.readouterr().err.splitlines() == [
        "gpupilot serve: local API request failed: POST /jobs (ValueError: boom)",
        "gpupilot serve: request from 127.0.0.1:5555 failed (KeyError: 'body')",
    ]
    assert log_file.read_text().count("Traceback") == 2


def test_the_embedded_aws_and_libraries_log_to_the_file_only(tmp_path: Path, capsys) -> None:
    log_file = tmp_path / "cloud.log"
    configure_logging(log_file)

    logging.getLogger("werkzeug").info('127.0.0.1 - - "POST / HTTP/1.1" 200 -')
    logging.getLogger("werkzeug").error("Error on request:\nTraceback (most recent call last): ...")
    logging.getLogger("botocore.credentials").warning("something about credentials")

    assert capsys.readouterr().err == ""
    logged = log_file.read_text()
    assert "Error on request" in logged and "something about credentials" in logged
    assert "POST / HTTP/1.1" not in logged  # no access log


def test_a_background_threads_error_is_one_line_on_the_console(tmp_path: Path, capsys) -> None:
    configure_logging(tmp_path / "cloud.log")

    worker = threading.Thread(target=lambda: 1 / 0, name="gpupilot-sweep")
    worker.start()
    worker.join()

    err = capsys.readouterr().err
    assert err == "gpupilot serve: thread gpupilot-sweep failed (ZeroDivisionError: division by zero)\n"


def test_verbose_shows_request_lines_dropped_connections_and_tracebacks(tmp_path: Path, capsys) -> None:
    configure_logging(tmp_path / "cloud.log", verbose=True)

    logging.getLogger("werkzeug").info('127.0.0.1 - - "POST / HTTP/1.1" 200 -')
    try:
        raise BrokenPipeError(32, "Broken pipe")
    except BrokenPipeError:
        _log_request_error(None, ("127.0.0.1", 5555))
    fail_with(ValueError("boom"))

    err = capsys.readouterr().err
    assert '"POST / HTTP/1.1" 200' in err
    assert "went away before its answer" in err
    assert "Traceback" in err and "ValueError: boom" in err


def test_the_local_apis_errors_survive_powertools_duplicate_suppression(tmp_path: Path, capsys) -> None:
    # Given the functions' Powertools Logger (service "gpupilot") has filtered "gpupilot..." records out of the
    # root logger's handlers, as it does when a handler module is first imported
    from aws_lambda_powertools.logging.filters import SuppressFilter

    log_file = tmp_path / "cloud.log"
    configure_logging(log_file)
    for handler in logging.getLogger().handlers:
        handler.addFilter(SuppressFilter("gpupilot"))

    # When the local API fails
    fail_with(ValueError("boom"))

    # Then the failure is still on the console and in the log file
    assert capsys.readouterr().err == "gpupilot serve: local API request failed: POST /jobs (ValueError: boom)\n"
    assert "ValueError: boom" in log_file.read_text()
