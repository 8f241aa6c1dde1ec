"""Local clouds forked from a warm interpreter: `gpupilot serve` without paying its imports on every start.

The end-to-end layer starts about a hundred local clouds. Each fresh `gpupilot serve` spends about a second of CPU
importing moto, botocore, Flask and the functions before it serves (and more as each handler is first invoked): on a
2-core machine busy with other work, that was a tenth of the suite's CPU. Here one interpreter per test worker
imports them once and forks a child per cloud, which runs the same entry point the `gpupilot` command runs
(`gpupilot.cli.main`) with the same arguments, its output to a file; only the imports are shared. The interpreter
learns what to import from its children: each writes, as it exits, the modules it had imported, and the next fork
starts with them. It never starts a thread or a server itself (a fork copies only the thread that forks), and moto's
state lives in backends made on first use, so every child starts with an empty cloud, as `gpupilot serve` does.

`tests/e2e/test_cli_serve.py` and `tests/e2e/test_demo.py` still run the installed command itself.

Protocol (one JSON object a line, on the interpreter's stdin and stdout):
  {"spawn": [argv...], "output": path, "environment": {...}, "cwd": path}  ->  {"pid": n}
  {"status": pid}                        ->  {"returncode": n or null while it runs}
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

# What the interpreter never imports for its children: the project's own packages and Powertools (their modules read
# the environment as they are imported, when a Logger or a setting is made: a test's POWERTOOLS_LOG_LEVEL must reach
# the child as it reaches a fresh `gpupilot serve`), the test packages, and __main__. Only libraries are shared; the
# project's modules, a tenth of the imports, are imported by each child.
NOT_PRELOADED = frozenset(
    {"__main__", "functions", "gpupilot", "host_agent", "payloads", "stacks", "bench", "aws_lambda_powertools", "tests"}
    | {"_pytest", "pytest", "pluggy", "xdist", "execnet"}
)


def _preload(names: list[str]) -> None:
    for name in names:
        if name in sys.modules or name.split(".")[0] in NOT_PRELOADED:
            continue
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _child(argv: list[str], output: str, environment: dict[str, str], learnt: str) -> None:
    """In the forked child: the command's output to `output`, in `environment`, then `gpupilot <argv>`; never
    returns."""
    code = 1
    try:
        os.environ.clear()
        os.environ.update(environment)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sink = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(sink, 1)
        os.dup2(sink, 2)
        os.close(sink)
        nothing = os.open(os.devnull, os.O_RDONLY)
        os.dup2(nothing, 0)
        os.close(nothing)
        sys.stdin = open(os.devnull)  # noqa: SIM115 - the child's whole life
        real_exit = os._exit

        def exit_telling_imports(status: int) -> NoReturn:
            # `gpupilot serve` ends with os._exit once stopped and flushed: its imports are told on the way out.
            _tell_imports(learnt)
            real_exit(status)

        os._exit = exit_telling_imports
        from gpupilot.cli import main

        try:
            code = main(argv)
        except SystemExit as leaving:
            code = leaving.code if isinstance(leaving.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            # As the interpreter would at exit (a log handler's last lines), then gone without unwinding into the loop.
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)  # once the command ran, the exit that tells its imports


def _tell_imports(learnt: str) -> None:
    """The modules this child imported, for the next forks (written whole, then renamed: a reader never sees half)."""
    with contextlib.suppress(Exception):
        written = Path(f"{learnt}.{os.getpid()}")
        written.write_text("\n".join(list(sys.modules)))
        written.replace(learnt)


def _reap(children: set[int], exited: dict[int, int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        exited[pid] = os.waitstatus_to_exitcode(status)


def serve_forks() -> None:
    """The warm interpreter's loop: fork a child per request, answer what became of them, and learn their imports."""
    answers = sys.stdout
    learnt = Path(os.environ["GPUPILOT_WARM_LEARNT"])
    exited: dict[int, int] = {}
    children: set[int] = set()
    for line in sys.stdin:
        request = json.loads(line)
        _reap(children, exited)
        if "spawn" in request:
            if learnt.exists():
                _preload(learnt.read_text().split())
            if threading.active_count() > 1:
                # A fork copies only the calling thread: with another running, a lock it held stays held in the child.
                answers.write(json.dumps({"refused": f"threads running: {threading.enumerate()}"}) + "\n")
                answers.flush()
                continue
            answers.flush()
            sys.stderr.flush()
            # What is imported stays out of the children's collections: they would otherwise copy every page of it.
            gc.freeze()
            pid = os.fork()
            if pid == 0:
                os.chdir(request["cwd"])
                _child(request["spawn"], request["output"], request["environment"], str(learnt))
            children.add(pid)
            answer: dict[str, Any] = {"pid": pid}
        else:
            answer = {"returncode": exited.get(request["status"])}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class WarmUnavailable(Exception):
    """No child can be forked (the interpreter is gone, or a thread runs in it): start the command itself."""


class WarmLauncher:
    """The test process's side: one warm interpreter, started on first use, stopped at exit."""

    def __init__(self, folder: Path) -> None:
        environment = dict(os.environ, GPUPILOT_WARM_LEARNT=str(folder / "learnt-modules.txt"))
        command = [sys.executable, "-m", "tests.e2e.warm"]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment, cwd=Path.cwd()
        )
        self._lock = threading.Lock()
        atexit.register(self.close)

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        with self._lock:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        if not line:
            raise WarmUnavailable("the warm interpreter has gone")
        return dict(json.loads(line))

    def spawn(self, argv: list[str], output: Path) -> WarmProcess:
        output.write_text("")  # there from the start, as a shell's redirection makes it
        # The environment and folder of the moment, as a process started now would inherit them (a test may have set
        # a variable).
        request = {"spawn": argv, "output": str(output), "environment": dict(os.environ), "cwd": os.getcwd()}
        answer = self.ask(request)
        if "pid" not in answer:
            raise WarmUnavailable(answer.get("refused", "no child"))
        return WarmProcess(answer["pid"], self)

    def close(self) -> None:
        if self._process.poll() is None and self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()


class WarmProcess:
    """A forked child, as much of subprocess.Popen as the tests use: poll, terminate, kill, wait."""

    def __init__(self, pid: int, launcher: WarmLauncher) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._launcher = launcher

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = self._launcher.ask({"status": self.pid})["returncode"]
            except WarmUnavailable:
                # The interpreter is gone, and its children with it (reaped by init): gone is all there is to know.
                try:
                    os.kill(self.pid, 0)
                except ProcessLookupError:
                    self.returncode = -signal.SIGKILL
        return self.returncode

    def send_signal(self, number: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("gpupilot (forked)", timeout or 0)
            time.sleep(0.05)
        return code


if __name__ == "__main__":
    serve_forks()
