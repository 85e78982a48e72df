"""The field tables of docs/reports.md, written from the JSON Schemas ppaux ships (one source of
truth: ``tests/test_docs.py`` checks the page holds exactly these tables).

``python -m reports.schema_docs`` prints them."""

from __future__ import annotations

from typing import Any

from ppaux.report import SCHEMA_VERSIONS, schema

# The file a kind is written to, where it is not <kind>.json: the fuzz job's two reports.
FILES = {"fuzz-run": "fuzz.json", "fuzz-replay": "replay.json"}


def _type(spec: dict[str, Any]) -> str:
    if "const" in spec:
        return f"`{spec['const']}`"
    if "enum" in spec:
        return " or ".join(f"`{v}`" for v in spec["enum"])
    if "$ref" in spec:
        return str(spec["$ref"]).rsplit("/", 1)[-1]
    kind = spec.get("type", "")
    return " or ".join(kind) if isinstance(kind, list) else kind


def table(properties: dict[str, Any], definitions: dict[str, Any]) -> list[str]:
    rows = ["| field | type | meaning |", "| --- | --- | --- |"]
    for name, spec in properties.items():
        # A reference reads as what it refers to; its own description, where it has one, wins.
        shown = definitions[spec["$ref"].rsplit("/", 1)[-1]] if "$ref" in spec else spec
        meaning = spec.get("description") or shown.get("description", "")
        rows.append(f"| `{name}` | {_type(shown)} | {meaning} |")
    return rows


def render() -> str:
    """Each report kind's field tables: the report, then each kind of entry it holds."""
    lines: list[str] = []
    for kind in SCHEMA_VERSIONS:
        doc = schema(kind)
        defs = doc.get("$defs", {})
        heading = f"### {FILES.get(kind, f'{kind}.json')} (format version {SCHEMA_VERSIONS[kind]})"
        lines += [heading, ""] + table(doc["properties"], defs)
        for name in sorted(defs):
            if "properties" in defs[name]:
                lines += ["", f"Each `{name}`:", ""] + table(defs[name]["properties"], defs)
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
