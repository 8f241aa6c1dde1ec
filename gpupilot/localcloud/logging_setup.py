"""How `gpupilot serve` logs: everything to its log file, only the local API's errors (one line each) on the
console unless verbose; a background thread's or a request's failure logged instead of printed."""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path
from typing import Any

LOCAL_LOGGER = "gpupilot.local"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries whose chatter is detail: request lines, the embedded AWS's own errors, HTTP retries.
CHATTY_LOGGERS = ("werkzeug", "moto", "botocore", "boto3", "urllib3", "docker")


class _OneLine(logging.Formatter):
    """A record as one line, its exception reduced to its type and message (the log file has the traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"gpupilot serve: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            line += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        return " ".join(line.splitlines())


def _not_a_disconnect(record: logging.LogRecord) -> bool:
    """A client that goes away mid-answer (Ctrl-C, a time-out) is not the server's problem."""
    return not (record.exc_info and isinstance(record.exc_info[1], ConnectionError))


def configure_logging(log_file: Path | None, verbose: bool = False) -> None:
    """Logging for `gpupilot serve`: every server log to `log_file` (the functions' logs go there too, by the
    dispatcher); on stderr only the local API's errors, one line each (not clients that hung up), or, `verbose`,
    everything with its traceback: request lines, the embedded AWS, dropped connections."""

    def to_file() -> logging.Handler | None:
        if log_file is None:
            return None
        handler = logging.FileHandler(log_file, delay=True)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        return handler

    def to_console() -> logging.Handler:
        handler = logging.StreamHandler(sys.stderr)
        if verbose:
            handler.setFormatter(logging.Formatter(LOG_FORMAT))
        else:
            handler.setLevel(logging.WARNING)
            handler.setFormatter(_OneLine())
            handler.addFilter(_not_a_disconnect)
        return handler

    # Handlers of their own for the local logger: Powertools' Logger filters every "gpupilot..." record out of
    # the root logger's handlers (its duplicate suppression), which would silence the local API's errors.
    root = logging.getLogger()
    root.handlers = [h for h in (to_file(), to_console() if verbose else None) if h is not None]
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
    # The embedded AWS answers the handlers, not the user: its errors go to the log file (the console with
    # --verbose, which also shows its request lines).
    logging.getLogger("werkzeug").setLevel(logging.INFO if verbose else logging.ERROR)
    local = logging.getLogger(LOCAL_LOGGER)
    local.handlers = [h for h in (to_file(), to_console()) if h is not None]
    local.setLevel(logging.DEBUG if verbose else logging.INFO)
    local.propagate = False  # not to the functions' structured logger ("gpupilot"), which prints on stdout
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_error


def _log_thread_error(failure: threading.ExceptHookArgs) -> None:
    """A background thread's uncaught error: logged (one line on the console) instead of a printed traceback."""
    if failure.exc_type is SystemExit:
        return
    exc_info = (failure.exc_type, failure.exc_value or failure.exc_type(), failure.exc_traceback)
    name = failure.thread.name if failure.thread else "?"
    logging.getLogger(LOCAL_LOGGER).error("thread %s failed", name, exc_info=exc_info)


def _log_request_error(request: Any, client_address: Any) -> None:
    """socketserver's handle_error, logged (as one line on the console) instead of a traceback printed there."""
    error = sys.exc_info()[1]
    client = ":".join(map(str, client_address[:2])) if isinstance(client_address, tuple) else str(client_address)
    logger = logging.getLogger(LOCAL_LOGGER)
    if isinstance(error, ConnectionError):
        logger.debug("client %s went away before its answer: %s", client, error)
    else:
        logger.error("request from %s failed", client, exc_info=True)
