"""How big the strategies draw (:class:`Scope`) and what a run favours (:class:`Swarm`).

A scope is the one place the strategies take their default size bounds from: every bound stays a
public argument of its strategy, and a strategy called without it reads the active scope
(:func:`active_scope`). ``small`` is what CI draws (Jackson's small-scope hypothesis: most transport
bugs show in small examples, and CI must be fast); ``medium`` and ``large`` reach the bugs that only
larger inputs show (loop bounds, size thresholds, rank- or numel-only paths, long runs of adds and
pops), as QuickCheck's size parameter does. ``Scope.at(size)`` interpolates between small and large.

A swarm configuration (Groce et al., ISSTA 2012) switches features off for a whole run, so that the
corners a uniform mix dilutes are each one run's focus: which dtypes, views, names and defects the
strategies draw, whether sides may be zero, and which size bounds take the scope's (the others stay
small). ``None`` (the default) switches nothing off.

Both are active per context (:func:`use_scope`): ppaux's pytest plugin makes them active around each
test of the shipped suite, from ``--ppaux-scope`` and ``--ppaux-swarm`` or the run's tuning.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

__all__ = [
    "SCOPES",
    "SWARM_DEFECTS",
    "SWARM_NAMES",
    "SWARM_WIDE",
    "Scope",
    "Swarm",
    "active_scope",
    "active_swarm",
    "bound",
    "counted",
    "parse_scope",
    "parse_swarm",
    "use_scope",
]


@dataclass(frozen=True)
class Scope:
    """The default size bounds of the strategies, and how sizes are drawn between them.

    - ``max_aux``: aux keys already in a relayed dict (``transport_dicts(aux=True)``);
    - ``max_payload``: items of an observer's output (``aux_payloads``, ``aux_outputs``);
    - ``max_extra``: ordinary keys besides the base one (``transport_dicts``): SGLang's, then as
      many ``req{i}.*`` keys as it takes past them;
    - ``max_dims``, ``max_side``: rank and side of ``tensors()`` drawn on their own;
    - ``item_max_dims``, ``item_max_side``: rank and side of the tensors in dicts and payloads;
    - ``steps``: steps of a stateful run of adds and pops;
    - ``uniform_sizes``: draw each count uniformly between its bounds first (the far bounds are
      reached, and a count shrinks to the smallest that fails: a bug that needs five aux tensors
      shrinks to exactly five); ``False``: Hypothesis's own list sizes, which stay near the small end;
    - ``guided``: the suite's properties call :func:`hypothesis.target` on the sizes where a bug hides
      (aux count, key count, rank, payload width); off in ``small``, where it would change CI's draws.
    """

    name: str
    max_aux: int
    max_payload: int
    max_extra: int
    max_dims: int
    max_side: int
    item_max_dims: int
    item_max_side: int
    steps: int
    uniform_sizes: bool
    guided: bool

    def at(self, size: float) -> Scope:
        """The scope ``size`` of the way (0 to 1) from ``small`` to this one: QuickCheck's size."""
        if not 0.0 <= size <= 1.0:
            raise InvalidArgument(f"size={size!r} must be between 0 and 1")
        if size == 0.0:
            return SCOPES["small"]
        small = SCOPES["small"]
        bounds = {
            f.name: round(getattr(small, f.name) + (getattr(self, f.name) - getattr(small, f.name)) * size)
            for f in dataclasses.fields(self)
            if f.type == "int"
        }
        return dataclasses.replace(self, name=f"{self.name}@{size:g}", **bounds)

    def as_dict(self) -> dict[str, Any]:
        """Every bound by name: what a report records, and :func:`parse_scope` reads back."""
        return dataclasses.asdict(self)


SCOPES: dict[str, Scope] = {
    # What CI has always drawn: the bounds the strategies had before scopes existed.
    "small": Scope("small", 2, 3, 3, 3, 4, 2, 3, 12, uniform_sizes=False, guided=False),
    "medium": Scope("medium", 8, 8, 16, 4, 5, 3, 4, 30, uniform_sizes=True, guided=True),
    # Realistic SGLang dicts and observers: tens of aux tensors, about a hundred keys, rank 4 to 5,
    # thousands of elements per tensor.
    "large": Scope("large", 32, 32, 100, 5, 8, 4, 8, 100, uniform_sizes=True, guided=True),
}

# What a swarm configuration may switch off. Names: "plain" (ASCII text) or "tricky" (unicode, dots,
# the prefix itself); defects of an invalid payload; the size bounds that take the scope's.
SWARM_NAMES = ("plain", "tricky")
SWARM_DEFECTS = ("bad_name", "non_tensor", "collision")
SWARM_WIDE = ("aux", "payload", "extra", "rank", "steps")


@dataclass(frozen=True)
class Swarm:
    """A run's configuration of features: each field names what stays on (``None``: everything).

    ``dtypes`` (names of torch dtypes), ``views`` (see ``tensors()``), ``names``
    (:data:`SWARM_NAMES`), ``defects`` (:data:`SWARM_DEFECTS`), ``wide`` (:data:`SWARM_WIDE`: the
    scope's bounds that apply, the others stay ``small``'s), ``empty`` (whether a side may be 0).
    """

    dtypes: tuple[str, ...] | None = None
    views: tuple[str, ...] | None = None
    names: tuple[str, ...] | None = None
    defects: tuple[str, ...] | None = None
    wide: tuple[str, ...] | None = None
    empty: bool = True

    @classmethod
    def draw(cls, seed: int, dtypes: tuple[str, ...], views: tuple[str, ...]) -> Swarm:
        """The configuration of seed ``seed``: one to three dtypes, and each other feature on with probability
        1/2, at least one of each kind on (the same configuration for the same seed, on every machine)."""
        rng = random.Random(seed)

        def some(options: tuple[str, ...]) -> tuple[str, ...]:
            kept = tuple(o for o in options if rng.random() < 0.5)
            return kept or (rng.choice(options),)

        return cls(
            # A few dtypes only: a dtype-only path is a round's focus when its dtype is one of two or three.
            dtypes=tuple(rng.sample(dtypes, k=min(len(dtypes), rng.randint(1, 3)))),
            views=some(views),
            names=some(SWARM_NAMES),
            defects=some(SWARM_DEFECTS),
            wide=some(SWARM_WIDE),
            empty=rng.random() < 0.5,
        )

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    def widens(self, bound: str) -> bool:
        return self.wide is None or bound in self.wide


# The scope's bounds each swarm size feature governs; bounds of features switched off stay small's.
_WIDE_BOUNDS = {
    "max_aux": "aux",
    "max_payload": "payload",
    "max_extra": "extra",
    "max_dims": "rank",
    "max_side": "rank",
    "item_max_dims": "rank",
    "item_max_side": "rank",
    "steps": "steps",
}


def bound(name: str) -> int:
    """The active scope's bound ``name`` (a field of :class:`Scope`), or ``small``'s where the active
    swarm configuration keeps that size feature small."""
    swarm = _SWARM.get()
    scope = _SCOPE.get() if swarm is None or swarm.widens(_WIDE_BOUNDS[name]) else SCOPES["small"]
    value: int = getattr(scope, name)
    return value


def counted(
    elements: st.SearchStrategy[Any], min_size: int, max_size: int, *, uniform: bool, **unique: Any
) -> st.SearchStrategy[list[Any]]:
    """A list of ``min_size`` to ``max_size`` elements: Hypothesis's own sizes, or (``uniform``) at least a
    floor drawn uniformly first, which reaches the far bound; the floor shrinks, and then the elements past
    it, to the smallest list that fails (the choices stay aligned as the floor drops)."""
    if not uniform:
        return st.lists(elements, min_size=min_size, max_size=max_size, **unique)
    # The floor stays below max_size: a list of a fixed size draws no "one more?" choices, and its count
    # could not shrink (the floor's choice would no longer line up with the list's).
    return st.integers(min_size, max(min_size, max_size - 1)).flatmap(
        lambda n: st.lists(elements, min_size=n, max_size=max_size, **unique)
    )


def parse_scope(text: str) -> Scope:
    """A scope by name (``small``, ``medium``, ``large``), or as :meth:`Scope.as_dict` wrote it (JSON)."""
    if text in SCOPES:
        return SCOPES[text]
    try:
        fields = json.loads(text)
        return Scope(**fields)
    except (ValueError, TypeError) as exc:
        raise InvalidArgument(
            f"scope {text!r}: expected one of {', '.join(SCOPES)} or a JSON object of every bound ({exc})"
        ) from None


def parse_swarm(text: str) -> Swarm:
    """A swarm configuration as :meth:`Swarm.as_dict` wrote it (JSON); ``{}`` switches nothing off."""
    try:
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(text).items()}
        return Swarm(**fields)
    except (ValueError, TypeError, AttributeError) as exc:
        raise InvalidArgument(f"swarm {text!r}: expected a JSON object of Swarm's fields ({exc})") from None


_SCOPE: contextvars.ContextVar[Scope] = contextvars.ContextVar("ppaux_scope", default=SCOPES["small"])
_SWARM: contextvars.ContextVar[Swarm | None] = contextvars.ContextVar("ppaux_swarm", default=None)


def active_scope() -> Scope:
    """The scope the strategies take their default bounds from here (``small`` unless one is in use)."""
    return _SCOPE.get()


def active_swarm() -> Swarm | None:
    """The swarm configuration in use here, if any."""
    return _SWARM.get()


@contextlib.contextmanager
def use_scope(scope: Scope, swarm: Swarm | None = None) -> Iterator[Scope]:
    """Strategies built inside the block take their default bounds from ``scope`` and favour ``swarm``."""
    scope_token, swarm_token = _SCOPE.set(scope), _SWARM.set(swarm)
    try:
        yield scope
    finally:
        _SCOPE.reset(scope_token)
        _SWARM.reset(swarm_token)
