"""Runs one regression test file with unittest and prints each test's outcome as JSON (the last
line of stdout). Run by path, not imported: it uses the standard library only, so that the proof
runs as the file will run in a project without ppaux.

    python driver.py IMPLEMENTATION_MODULE TEST_FILE...
"""

import importlib
import io
import json
import os
import sys
import unittest
from collections.abc import Iterator


def _files_of(module_name: str) -> set[str]:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    return {os.path.realpath(path)} if path else set()


def run_file(path: str, module_name: str) -> dict[str, object]:
    folder, stem = os.path.split(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(stem[:-3])
    except BaseException as exc:  # the file must import: anything else is the proof's finding
        return {"import_error": f"{type(exc).__name__}: {exc}"}
    implementation = _files_of(module_name)
    result = unittest.TestResult()
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    # A suite lets go of each test once it ran: name them all first.
    outcomes: dict[str, dict[str, object]] = {
        test.id().rsplit(".", 1)[-1]: {"outcome": "pass"} for test in _tests(suite)
    }
    suite.run(result)
    for test, text in result.failures:
        outcomes[test.id().rsplit(".", 1)[-1]] = {"outcome": "fail", "text": text}
    for test, text in result.errors:
        outcomes[test.id().rsplit(".", 1)[-1]] = {
            "outcome": "error",
            "text": text,
            "in_implementation": _errored_in(text, implementation),
        }
    for test, why in result.skipped:
        outcomes[test.id().rsplit(".", 1)[-1]] = {"outcome": "skip", "text": why}
    return {"tests": outcomes}


def _errored_in(text: str, files: set[str]) -> bool:
    """Whether a formatted traceback passes through one of ``files`` (the implementation's module)."""
    lines = [line.strip() for line in text.splitlines()]
    # From the right: a path may hold a double quote, the rest of the line cannot.
    frames = [line[len('File "') :].rsplit('", line ', 1)[0] for line in lines if line.startswith('File "')]
    return any(os.path.realpath(frame) in files for frame in frames)


def _tests(suite: unittest.TestSuite) -> Iterator[unittest.TestCase]:
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _tests(item)
        else:
            yield item


if __name__ == "__main__":  # pragma: no cover - runs in the proof's child interpreter
    stdout = sys.stdout
    sys.stdout = io.StringIO()  # what the tests print is not the verdict
    module_name, paths = sys.argv[1], sys.argv[2:]
    verdicts = {os.path.basename(path): run_file(path, module_name) for path in paths}
    stdout.write(json.dumps(verdicts) + "\n")
