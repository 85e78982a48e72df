"""A source file with no-mutate pragmas of every kind, for the tests that read its markings
(tests/test_mutation_markings.py, tests/test_reports.py)."""

# One marking of each kind, sound and refused, with the code around it that decides which.
MARKED = (
    "x = 1\n"
    "open(p, encoding='utf-8')  # pragma: no mutate - equivalent: same codec\n"
    "def f():  # pragma: no cover  # pragma: no mutate block - runs in a child\n"
    "    return 1 + 2\n"
    "y = 2  # pragma: no mutate\n"
    "# pragma: no mutate start - a tuned region\n"
    "z = 3\n"
    "# pragma: no mutate end\n"
    "v = 5  # pragma: no mutate start - after code\n"
    "u = 6\n"
    "w = 7  # pragma: no mutate end\n"
    "t = [\n"
    "    # pragma: no mutate start - inside a list\n"
    "    1,\n"
    "    # pragma: no mutate end\n"
    "]\n"
)
