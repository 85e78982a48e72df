"""``docs/cli.md``: every ``ppaux`` command's ``--help``, rendered from the parser itself, so the
page cannot drift from what the console script says (``tests/test_docs.py`` compares them)."""

from __future__ import annotations

import argparse
import io
import os
import sys
from contextlib import redirect_stdout, suppress
from pathlib import Path
from unittest.mock import patch

from ppaux.cli.main import SUBCOMMANDS, build_parser

# argparse wraps to the terminal's width and, from Python 3.14, colours a terminal's help.
PLAIN_TERMINAL = {"COLUMNS": "100", "NO_COLOR": "1", "PYTHON_COLORS": "0"}


def python_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def _help(argv: list[str]) -> str:
    """What ``ppaux ARGV --help`` prints (argparse prints it, then exits 0)."""
    out = io.StringIO()
    with redirect_stdout(out), suppress(SystemExit):
        build_parser().parse_args([*argv, "--help"])
    return out.getvalue()


def _nested(name: str) -> list[str]:
    """The subcommands of ``ppaux NAME`` (``ppaux fuzz run``, ...), in the order its parser lists them."""
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    sub = commands.choices[name]
    actions = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
    return list(actions[0].choices) if actions else []


def render() -> str:
    with patch.dict(os.environ, PLAIN_TERMINAL):
        blocks = [("ppaux", _help([]))]
        for name in SUBCOMMANDS:
            blocks.append((f"ppaux {name}", _help([name])))
            blocks += [(f"ppaux {name} {inner}", _help([name, inner])) for inner in _nested(name)]
    lines = [
        "# Command reference",
        "",
        f"What each `ppaux` command prints for `--help`, rendered from its parser (Python {python_version()}'s "
        "argparse, 100 columns) by `python -m reports cli-reference`; a test fails when this page and the "
        "console script disagree.",
        "",
    ]
    lines += [f"- [`{title}`](#{title.replace(' ', '-')})" for title, _ in blocks]
    for title, text in blocks:
        lines += ["", f"## {title}", "", "```text", text.rstrip("\n"), "```"]
    return "\n".join(lines) + "\n"


def write(page: Path) -> Path:
    page.write_text(render(), encoding="utf-8")
    return page
