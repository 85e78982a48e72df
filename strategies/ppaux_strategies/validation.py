"""Up-front argument checks shared by the public strategies (hypothesis.extra.numpy style)."""

from __future__ import annotations

from hypothesis.errors import InvalidArgument


def check_type(typ: type | tuple[type, ...], value: object, name: str) -> None:
    # bool is an int subclass; an int where a bool is asked for is almost always a slip.
    if not isinstance(value, typ) or (typ is not bool and isinstance(value, bool) and typ is int):
        tname = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise InvalidArgument(f"{name}={value!r} must be of type {tname}, not {type(value).__name__}")


def check_range(value: int, name: str, *, low: int, high: int | None = None) -> None:
    check_type(int, value, name)
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidArgument(f"{name}={value!r} must be {bound}")


def check_order(low: int, high: int, low_name: str, high_name: str) -> None:
    if low > high:
        raise InvalidArgument(f"{low_name}={low!r} must not exceed {high_name}={high!r}")


def check_prefix(prefix: object, name: str = "prefix") -> None:
    check_type(str, prefix, name)
    if not prefix:
        raise InvalidArgument(f"{name} must be a non-empty str")
