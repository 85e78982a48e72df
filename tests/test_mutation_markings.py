"""The no-mutate pragmas of a source tree as ppaux's own mutation runs report them: where each is,
whether it covers a block, its reason and the problem that makes the gate refuse it. In-process,
so that the package scope's mutants of ppaux.mutation.pragmas meet them (tests/test_reports.py,
which also reads them, runs outside that scope)."""

from __future__ import annotations

from ppaux.mutation.pragmas import NO_REASON, REGION_AFTER_CODE, REGION_INSIDE_BRACKETS, markings
from ppaux.report import Marking
from ppaux.report.render import markings_section
from tests.marked_source import MARKED

# Brackets opened and closed around the markings: only the brackets still open where a block or
# region starts make it mark nothing; a one-line marking inside brackets is sound.
_BRACKETS = (
    "def g(a):\n"
    "    return a\n"
    "s = g(g(1))\n"
    "# pragma: no mutate start - after a closed call\n"
    "r = 1\n"
    "# pragma: no mutate end\n"
    "q = [\n"
    "    (1, 2),\n"
    "    # pragma: no mutate block - one bracket still open\n"
    "    3,  # pragma: no mutate - equivalent: a line inside a list\n"
    "    {\n"
    "        # pragma: no mutate start - two brackets open\n"
    "        4: 5,\n"
    "        # pragma: no mutate end\n"
    "    },\n"
    "]\n"
    "def h():\n"
    "    # pragma: no mutate block - after the list is closed\n"
    "    return 6\n"
)


def test_every_marking_of_a_tree_is_listed_with_its_reason_and_the_problem_the_gate_refuses(tmp_path):
    src = tmp_path / "pkg"
    (src / "sub").mkdir(parents=True)
    (src / "a.py").write_text("x = 1\n")  # nothing marked: read past, not the end of the listing
    (src / "m.py").write_text(MARKED)
    (src / "sub" / "n.py").write_text(_BRACKETS)
    # Only Python sources carry markings mutmut reads.
    (src / "notes.txt").write_text("y = 2  # pragma: no mutate - not Python\n")
    assert [m.to_json() for m in markings(src)] == [
        {"where": "pkg/m.py:2", "block": False, "reason": "equivalent: same codec", "problem": None},
        {"where": "pkg/m.py:3", "block": True, "reason": "runs in a child", "problem": None},
        {"where": "pkg/m.py:5", "block": False, "reason": None, "problem": NO_REASON},
        {"where": "pkg/m.py:6", "block": True, "reason": "a tuned region", "problem": None},
        {"where": "pkg/m.py:9", "block": False, "reason": "after code", "problem": REGION_AFTER_CODE},
        {"where": "pkg/m.py:11", "block": False, "reason": None, "problem": REGION_AFTER_CODE},
        {"where": "pkg/m.py:13", "block": True, "reason": "inside a list", "problem": REGION_INSIDE_BRACKETS},
        {"where": "pkg/sub/n.py:4", "block": True, "reason": "after a closed call", "problem": None},
        {
            "where": "pkg/sub/n.py:9",
            "block": True,
            "reason": "one bracket still open",
            "problem": REGION_INSIDE_BRACKETS,
        },
        {"where": "pkg/sub/n.py:10", "block": False, "reason": "equivalent: a line inside a list", "problem": None},
        {"where": "pkg/sub/n.py:12", "block": True, "reason": "two brackets open", "problem": REGION_INSIDE_BRACKETS},
        {"where": "pkg/sub/n.py:18", "block": True, "reason": "after the list is closed", "problem": None},
    ]


def test_the_markings_section_shows_each_marking_with_its_reason_then_its_problem():
    found = [
        Marking("pkg/m.py:2", False, "equivalent: same codec", None),
        Marking("pkg/m.py:5", False, None, NO_REASON),
        Marking("pkg/m.py:9", False, "after code", REGION_AFTER_CODE),
        Marking("pkg/m.py:13", True, "inside a list", REGION_INSIDE_BRACKETS),
    ]
    assert markings_section(found) == [
        "## Marked equivalent (`# pragma: no mutate`)",
        "",
        "- `pkg/m.py:2`: equivalent: same codec",
        f"- `pkg/m.py:5`: **{NO_REASON}**",
        f"- `pkg/m.py:9`: after code **{REGION_AFTER_CODE}**",
        f"- `pkg/m.py:13` (block): inside a list **{REGION_INSIDE_BRACKETS}**",
    ]
    # A run that found no markings (or read none) has no section.
    assert markings_section([]) == []


def test_a_pragma_quoted_in_a_string_is_never_refused_by_the_gate(tmp_path):
    # Docs and messages quote the pragma; only a comment marks code (mutmut reads comments), so
    # the quotes must never fail the gate, whether listed or not.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "doc.py").write_text(
        'HOW = """\n'
        "# pragma: no mutate start - quoted in a docstring\n"
        '"""\n'
        "SAID = print(\n"
        '    "# pragma: no mutate block - quoted in a call",\n'
        ")\n"
    )
    assert [e for e in markings(tmp_path / "pkg") if e.problem] == []
