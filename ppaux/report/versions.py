"""Which version of a report's format a file holds, checked in one place for every report kind."""

from __future__ import annotations

from collections.abc import Mapping

# The format version each kind of report is written in; raise it when a field changes meaning or goes.
SCHEMA_VERSIONS = {"conformance": 1}
# The fuzz job's reports (ppaux.report.fuzz): a shard's or a merged run's fuzz.json, a replay's replay.json.
SCHEMA_VERSIONS |= {"fuzz-run": 1, "fuzz-replay": 1}
# What writes a kind's report again, for the refusal line (a kind not named here: a check).
REMAKE = {"fuzz-run": "run the fuzz job again", "fuzz-replay": "run the replay again"}
REMAKE |= {
    "mutate": "run ppaux mutate again",
    "mutation": "run the mutation run again",
    "faults": "run ppaux faults again",
}
# ppaux mutate, ppaux's own mutation runs, ppaux faults (issue 35).
SCHEMA_VERSIONS.update(mutate=1, mutation=1, faults=1)


class ReportFormatError(ValueError):
    """A report file that this version of ppaux cannot read: one line naming the file's version."""


def check_version(data: Mapping[str, object], kind: str) -> None:
    """Refuse, with one line, a ``kind`` report written in a format other than this version's.
    A report from before versioned formats (0.3 and earlier) has no ``schema_version``."""
    expected = SCHEMA_VERSIONS[kind]
    found = data.get("schema_version")
    if data.get("kind", kind) != kind:
        raise ReportFormatError(f"not a {kind} report: its kind is {data.get('kind')!r}")
    if found != expected:
        written = "before 0.4 (no schema_version)" if found is None else f"in format version {found!r}"
        raise ReportFormatError(
            f"this {kind} report was written {written}; ppaux reads format version {expected}: "
            + REMAKE.get(kind, "run the check again")
        )
