"""Reading a report file as a CI job would: valid against the schema ppaux ships for its kind, and
read back into the typed report, which writes the very same JSON."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from ppaux.report import FaultsReport, FuzzReplayReport, FuzzRunReport, MutateReport, MutationReport, schema

MODELS = {
    "mutate": MutateReport,
    "mutation": MutationReport,
    "faults": FaultsReport,
    "fuzz-run": FuzzRunReport,
    "fuzz-replay": FuzzReplayReport,
}


def validate(data: dict, kind: str) -> None:
    jsonschema.Draft202012Validator(schema(kind)).validate(data)


def conforms(data: dict, kind: str) -> None:
    """``data`` is what the schema of its ``kind`` describes, and reads back into the very same JSON."""
    validate(data, kind)
    assert MODELS[kind].from_json(data).to_json() == data


def read_valid(path: Path, kind: str) -> dict:
    """The JSON of the ``kind`` report at ``path``, checked against its schema and its typed model."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conforms(data, kind)
    return data
