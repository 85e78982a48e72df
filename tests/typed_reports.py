"""Reading a report file as a CI job would: valid against the schema ppaux ships for its kind, and
read back into the typed report, which writes the very same JSON."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from ppaux.report import FaultsReport, MutateReport, MutationReport, schema

MODELS = {"mutate": MutateReport, "mutation": MutationReport, "faults": FaultsReport}


def validate(data: dict, kind: str) -> None:
    jsonschema.Draft202012Validator(schema(kind)).validate(data)


def read_valid(path: Path, kind: str) -> dict:
    """The JSON of the ``kind`` report at ``path``, checked against its schema and its typed model."""
    data = json.loads(path.read_text(encoding="utf-8"))
    validate(data, kind)
    assert MODELS[kind].from_json(data).to_json() == data
    return data
