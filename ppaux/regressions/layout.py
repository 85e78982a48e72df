"""Long generated lines broken the way a person would: one item of the widest list, dict or call
per line."""

from __future__ import annotations

OPENING = {"(": ")", "[": "]", "{": "}"}


def _spans(line: str) -> list[tuple[int, int, list[int]]]:
    """Each bracket pair of ``line`` (outside string literals): (open, close, its own top-level commas)."""
    stack: list[tuple[int, list[int]]]
    spans, stack, quote, i = [], [], "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in OPENING:
            stack.append((i, []))
        elif ch in ")]}" and stack:
            start, commas = stack.pop()
            spans.append((start, i, commas))
        elif ch == "," and stack:
            stack[-1][1].append(i)
        i += 1
    return spans


def _widest(line: str) -> tuple[int, int, list[int]] | None:
    # Lists and dicts before calls: `f(x, [a, b])` breaks inside the list.
    found = [s for s in _spans(line) if s[2]]
    if not found:
        return None
    return max(found, key=lambda s: (line[s[0]] in "[{", s[1] - s[0]))


def wrap(line: str, width: int) -> list[str]:
    """``line`` as it is when it fits in ``width``, else broken at the widest bracket's commas."""
    if len(line) <= width:
        return [line]
    span = _widest(line)
    if span is None:
        return [line]
    start, end, commas = span
    indent = line[: len(line) - len(line.lstrip())]
    cuts = [start, *commas, end]
    items = [item for item in (line[a + 1 : b].strip() for a, b in zip(cuts, cuts[1:])) if item]
    out = [line[: start + 1]]
    for item in items:
        out += wrap(f"{indent}    {item},", width)
    return out + [f"{indent}{line[end:]}"]
