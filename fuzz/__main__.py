"""``python -m fuzz run|replay|report``: the checkout's spelling of ``ppaux fuzz``, the same code and exit statuses."""

from __future__ import annotations

import sys

from ppaux.cli.usage import USAGE_ERROR, OneLineParser, UsageError
from ppaux.fuzz import FuzzUsageError, add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m fuzz", description="ppaux's nightly fuzz job (also: ppaux fuzz)")
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except (UsageError, FuzzUsageError) as exc:
        print(f"fuzz: error: {exc}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
