"""Running the entry points as the tests do: in this process (the same ``main()`` the console scripts call,
without starting Python, torch, Lightning and transformers again: 10-15 s a command on two cores), or as a
process of its own where the process is what is tested (signals, locks held by another process, what a
command imports, a plugin on another path, W&B's service)."""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import subprocess
import sys
import traceback

from conftest import ROOT


def command_line(script: str, overrides) -> list[str]:
    # progress bars are for terminals; the tests read what a command prints
    return [script, *overrides, "trainer.enable_progress_bar=false"] if script == "train.py" else [script, *overrides]


def run_in_process(script: str, *overrides: str) -> subprocess.CompletedProcess:
    """``python <script> <overrides>`` as its ``main()`` in this process, from the clone's root: its stdout,
    stderr and exit status, as the process would give them (an uncaught exception's traceback, status 1)."""
    from hydra.core.global_hydra import GlobalHydra

    argv = command_line(script, overrides)
    app = importlib.import_module(f"legalft.apps.{script.removesuffix('.py')}")
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd, root_logger = sys.argv, os.getcwd(), logging.getLogger()
    saved_handlers, saved_level = list(root_logger.handlers), root_logger.level
    code = 0
    sys.argv = argv
    os.chdir(ROOT)
    GlobalHydra.instance().clear()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                app.main()
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            except BaseException:  # what the interpreter prints for an uncaught exception
                traceback.print_exc()
                code = 1
            finally:
                for handler in root_logger.handlers:  # the command's log file and console handlers
                    if handler not in saved_handlers:
                        handler.close()
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        root_logger.handlers[:] = saved_handlers
        root_logger.setLevel(saved_level)
        GlobalHydra.instance().clear()
    return subprocess.CompletedProcess([sys.executable, *argv], code, out.getvalue(), err.getvalue())


def run_process(script: str, *overrides: str, timeout: int = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python <script> <overrides>`` as a process of its own, from the clone's root."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, *command_line(script, overrides)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)


def run_script(script: str, *overrides: str, timeout: int = 600, env: dict | None = None,
               process: bool = False) -> subprocess.CompletedProcess:
    """An entry point's command: in this process, or (``process=True``, or an ``env`` of its own) as a process."""
    if process or env:
        return run_process(script, *overrides, timeout=timeout, env=env)
    return run_in_process(script, *overrides)


def two_at_a_time(function, items) -> list:
    """``function(item)`` for each item, two at a time: one's start-up (imports, single-threaded) overlaps
    another's work on a two-core machine. The results come back in the items' order."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(function, items))


def run_scripts(*commands: tuple[str, ...], timeout: int = 600, env: dict | None = None,
                process: bool = False) -> list[subprocess.CompletedProcess]:
    """Independent commands, results in the commands' order: one after another in this process, or as
    processes two at a time (``process=True`` or an ``env``)."""
    if process or env:
        return two_at_a_time(lambda command: run_process(*command, timeout=timeout, env=env), commands)
    return [run_in_process(*command) for command in commands]
