"""The observer conformance kit: does a plugin's output/observer pair survive a PP relay?

A plugin's test is three lines::

    from ppaux.testing import check_observer
    from my_plugin import MyObserver, outputs
    def test_pp_relay(): check_observer(MyObserver, outputs())

For every output drawn, the kit adds it to a PP dict shaped like SGLang's last stage
builds, checks what would break on the wire, relays the dict, pops it with a fresh
observer and compares. A failure is a :class:`KitFailure` whose message is the
finding and its fixes (:mod:`ppaux.testing.findings`, catalog errors with the catalog's
fixes); Hypothesis adds the minimal output that shows it.

Every step that runs the plugin's code (add, pop, the comparison) runs under a per-call time
limit (:mod:`ppaux.isolation`): a step that hangs is K14, one that ends the process K15. When no
supervisor watches this process, the check runs first in a forked child; only if that child
fails or dies does it run again here, each step then first in a forked child of its own where
the child died, so that a crash is a finding Hypothesis shrinks, not a dead test run.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

import torch
from hypothesis import given
from hypothesis import settings as Settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky, InvalidArgument
from ppaux_strategies.tensors import tensors_equal, visible_devices
from torch.multiprocessing.reductions import StorageWeakRef

from ppaux.core.errors import CATALOG
from ppaux.core.notes import add_note
from ppaux.core.transport import PipelineParallelAuxiliaryOutput
from ppaux.isolation import ChildOutcome, Crash, Guard, Hang, current, parse_timeout
from ppaux.relay.hop import channel_kind, relay
from ppaux.relay.wire import TensorDict
from ppaux.testing.calls import SuiteGuard
from ppaux.testing.containment import forks_usefully, prime_seed
from ppaux.testing.findings import GLOO_REJECTED_DTYPES, collision, message
from ppaux.testing.hypothesis_api import add_to_database_key
from ppaux.testing.impl import Implementation, ImplementationError, load
from ppaux.testing.lifecycle import difference, has_lifecycle, to_host

# pytest leaves out the frames of a module with this global: a failing check shows the plugin
# author's own test line and the finding, not the kit's machinery (``--full-trace`` shows it all).
__tracebackhide__ = True

# ``equal(original, rebuilt)``: the plugin's own output type, whatever it is (a Callable's parameters
# are contravariant: Callable[[object, object], bool] would refuse a function typed for its outputs).
Equal: TypeAlias = Callable[[Any, Any], bool]


class KitFailure(AssertionError):
    """A pair that would break in a PP relay; ``code`` is a kit (K*) or catalog code."""

    def __init__(self, code: str, *, name: object = None, **fields: str) -> None:
        self.code = code
        self.name = name
        super().__init__(message(code, name=name, **fields))


@dataclass
class KitResult:
    """What a passing :func:`check_observer` did: ``outputs`` is how many outputs it drew, each
    through add, the relay and pop on every receiving device."""

    outputs: int = 0

    def __str__(self) -> str:
        return f"check_observer drew {_outputs(self.outputs)}; each survived add, the relay and pop"


def _outputs(count: int) -> str:
    return f"{count} output" if count == 1 else f"{count} outputs"


def check_observer(
    observer_factory: Callable[[], object],
    outputs: st.SearchStrategy[object],
    *,
    equal: Equal | None = None,
    channel: str = "loopback",
    devices: str | Sequence[str | torch.device] = "auto",
    settings: Settings | None = None,
    impl: Implementation | str | None = None,
    timeout: float | None = None,
) -> KitResult:
    """Check, for every output ``outputs`` draws, that add -> relay -> pop with
    ``observer_factory()`` rebuilds an equal output, on each receiving device.

    By default the kit follows the rebuilt output through SGLang's lifecycle: it calls
    ``copy_to_host(copy)`` on the original and on the rebuilt output (``copy`` returns a CPU
    copy) and compares the two host outputs field by field (:mod:`ppaux.testing.lifecycle`);
    outputs without ``copy_to_host`` are compared by their ``to_pp_tensors()`` only.
    ``equal(original, rebuilt)`` replaces that comparison. ``channel`` is ``"loopback"`` (in-process),
    ``"gloo"`` (real processes) or ``"sglang"`` (real processes running SGLang's own wire code,
    :mod:`ppaux.relay.sglang`; its receiver allocates on its current device). ``devices``: where the
    receiving stage allocates; ``"auto"`` is cpu and every visible cuda device. ``settings`` are Hypothesis settings
    (``max_examples``, ``database``, ...); the kit always runs without a deadline.
    ``impl`` is the add/pop to relay with: an :class:`~ppaux.testing.impl.Implementation`,
    a module name or ``.py`` path, or ``None`` for ppaux's reference (the pytest fixture
    ``ppaux_observer_check`` passes the run's ``--ppaux-impl``, under the run's ``--ppaux-timeout``).

    Each step that runs the plugin's code (add, which calls ``to_pp_tensors()``; pop, which calls
    ``from_pp_tensors()``; ``copy_to_host``, the comparison, ``equal``) runs under a per-call time
    limit: the guard of ``impl`` if it has one (the fixture's), else the one installed for the
    running test (:func:`ppaux.isolation.current`), else :data:`~ppaux.isolation.DEFAULT_TIMEOUT`
    seconds. ``timeout`` (seconds) replaces that limit for this check, with a guard of its own.
    A step past its limit is K14, a step that ends the process K15. When nothing supervises this
    process (no guard installed for the test) and CUDA is not initialized in it, the check runs
    first in a forked child: whatever the plugin does there ends the child, not the caller. Only a
    check that fails or dies there is run again here, with each step first in a forked child of its
    own where the check's child died; the same examples are drawn again (the example database
    replays the failure, and the forked child draws Hypothesis's seed from the generator this
    process draws from next). So what a passing check's observer records stays in that child.
    Raises :class:`KitFailure`.

    Says how many outputs it drew: a passing check prints its :class:`KitResult` (one line) and
    returns it; a failing one adds a note to what it raises, ``check_observer drew N outputs
    (shrinking included)``.
    """
    if not callable(observer_factory):
        raise InvalidArgument(f"observer_factory={observer_factory!r} must be callable (e.g. the observer class)")
    if not isinstance(outputs, st.SearchStrategy):
        raise InvalidArgument(f"outputs={outputs!r} must be a Hypothesis strategy of your output objects")
    if equal is not None and not callable(equal):
        raise InvalidArgument(f"equal={equal!r} must be None or a callable (original, rebuilt) -> bool")
    try:
        in_process = channel_kind(channel).in_process
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
    if settings is not None and not isinstance(settings, Settings):
        raise InvalidArgument(f"settings={settings!r} must be None or hypothesis.settings")
    if timeout is not None:
        try:
            timeout = parse_timeout(timeout)
        except ValueError:
            raise InvalidArgument(f"timeout={timeout!r} must be None or a positive number of seconds") from None
    targets = _receiving_devices(devices)
    impl = _implementation(impl)
    supervisor = current()
    guard = SuiteGuard(timeout) if timeout is not None else impl.guard or supervisor or SuiteGuard()
    if impl.guard is not guard:
        impl = _unguarded(impl).guarded(guard)

    result = KitResult()

    # Named like the public function so that Hypothesis prints
    # "Failing test case: check_observer(output=...)".
    def check_observer(output: object) -> None:
        result.outputs += 1
        try:
            for device in targets:
                _round_trip(impl, observer_factory, output, equal, channel, device)
        except Hang as exc:
            raise KitFailure("K14", detail=exc.msg) from exc
        except Crash as exc:
            raise KitFailure("K15", detail=exc.msg) from exc

    run = given(output=outputs)(check_observer)
    # Hypothesis calls the check through a generated function that claims this file's lines: hide it too.
    run.__globals__["__tracebackhide__"] = True
    # One failing output is one message: never an ExceptionGroup of several. No deadline, even
    # with the caller's settings: the first gloo hop starts the worker processes.
    run = Settings(settings, deadline=None, report_multiple_bugs=False)(run)
    # Without this every plugin's check would share one entry in the example database.
    add_to_database_key(run, database_key(observer_factory, outputs).encode())
    isolated = guard.isolated
    try:
        _execute(run, guard, supervisor, in_process, result)
    except Exception as exc:
        add_note(exc, f"check_observer drew {_outputs(result.outputs)} (shrinking included)")
        raise
    finally:
        guard.isolated = isolated
    print(result)
    return result


def _execute(
    run: Callable[[], None], guard: Guard, supervisor: Guard | None, in_process: bool, result: KitResult
) -> None:
    """``run()``, here or first in a forked child; ``result`` ends up with the passing run's count.
    ``in_process``: the channel relays within this process (no gloo workers)."""
    if supervisor is not None or not forks_usefully():
        # A supervisor forked this process: a crash or hard hang here is its to report, and
        # it runs the test again with every step isolated (containment.py). A guard of the
        # kit's own follows it there. Where no child could run the check (no fork, or CUDA
        # initialized here), the kit forks none (only the timer is left).
        guard.isolated = guard.isolated or (supervisor is not None and supervisor.isolated)
        run()
    elif not in_process:
        # A forked copy of the whole check would share this process's gloo workers: isolate
        # each step instead, which runs only the plugin's code in a child.
        guard.isolated = True
        run()
    else:
        _contained(run, guard, result)


def _contained(run: Callable[[], None], guard: Guard, result: KitResult) -> None:
    """``run()`` first in a contained run (a forked child); again here only if it did not pass there."""
    prime_seed()
    first = guard.contain(functools.partial(_first_run, run, result))
    if first.kind == "passed":
        # The child counted the outputs it drew; this process drew none.
        result.outputs = first.value
        return
    if first.kind != "failed":
        # A crash, or a hang no timer signal could interrupt: each step in a child of its own.
        guard.isolated = True
    run()
    # The same examples passed here: what failed there depends on more than the drawn output.
    if first.kind == "failed":
        raise Flaky(
            f"the check failed in a forked child ({first.error}) but passed when run again in this process, on the "
            "same examples: it depends on state outside the drawn output (an earlier example, a file, the clock)"
        )
    raise KitFailure("K14" if first.kind == "hang" else "K15", detail=_unrepeated(first.outcome))


def _first_run(run: Callable[[], None], result: KitResult) -> tuple[int, str | None]:
    """How many outputs the check drew, and what it raised, in one line (``None`` when it passed)."""
    try:
        run()
    except BaseException as exc:
        return result.outputs, f"{type(exc).__name__}: {exc}".splitlines()[0]
    return result.outputs, None


def _unrepeated(outcome: ChildOutcome) -> str:
    return (
        f"the check's first run, in a forked child, {outcome.describe()}; run again with each step in a process of "
        "its own, every step returned: it depends"
        " on state outside the drawn output (an earlier example, a file, the clock)"
    )


def _unguarded(impl: Implementation) -> Implementation:
    """``impl`` without its guard: :meth:`Implementation.guarded` wraps add and pop in
    ``functools.partial(guard.call, "add", add)``."""
    if impl.guard is None:
        return impl
    add, pop = (
        fn.args[-1] if isinstance(fn, functools.partial) and fn.func == impl.guard.call else fn
        for fn in (impl.add, impl.pop)
    )
    return replace(impl, add=add, pop=pop, guard=None)


def database_key(observer_factory: object, outputs: st.SearchStrategy[object]) -> str:
    """The key of a check's failures in the example database: the factory's module and
    qualified name and the strategy's repr. Names, not reprs with addresses, so that a failure
    saved by one run replays on the next."""
    name = getattr(observer_factory, "__qualname__", None) or type(observer_factory).__qualname__
    return f"{getattr(observer_factory, '__module__', None) or ''}.{name}:{outputs!r}"


def _implementation(impl: Implementation | str | None) -> Implementation:
    if isinstance(impl, Implementation):
        return impl
    if impl is not None and not isinstance(impl, str):
        raise InvalidArgument(f"impl={impl!r} must be None, an Implementation, or a module name or .py path")
    try:
        return load(impl)
    except ImplementationError as exc:
        raise InvalidArgument(f"impl={impl!r}: {exc}") from None


def _receiving_devices(devices: str | Sequence[str | torch.device]) -> tuple[torch.device, ...]:
    if isinstance(devices, str) and devices == "auto":
        return tuple(torch.device(d) for d in visible_devices())
    if isinstance(devices, (str, torch.device)) or not isinstance(devices, Sequence) or not devices:
        raise InvalidArgument(f"devices={devices!r} must be 'auto' or a non-empty sequence of devices")
    try:
        return tuple(torch.device(d) for d in devices)
    except (RuntimeError, TypeError) as exc:
        raise InvalidArgument(f"devices={devices!r}: {exc}") from None


def _sglang_dict() -> TensorDict:
    # The ordinary keys SGLang's last stage sends next to the aux keys (0.5.23).
    return {
        "next_token_ids": torch.arange(2),
        "next_token_logprobs": torch.zeros(2),
        "extend_input_len_per_req": [1, 1],
        "__msg_type__": "output",
    }


def _round_trip(
    impl: Implementation,
    factory: Callable[[], object],
    output: object,
    equal: Equal | None,
    channel: str,
    device: torch.device,
) -> None:
    """One output through add, the relay and pop. ``impl`` is guarded: its add and pop, and every
    other step that runs the plugin's code, run under ``impl.guard``."""
    guard = impl.guard
    assert guard is not None
    sent = _sglang_dict()
    ordinary = set(sent)
    _catalog_call("add", impl.add, sent, output)
    names = [key[len(impl.prefix) :] for key in sent if key not in ordinary]
    for name in names:
        _check_wire(name, sent[impl.prefix + name])
        clash = collision(name, impl.prefix)
        if clash:
            raise KitFailure("K5", name=name, detail=clash)
    try:
        received = relay(sent, channel=channel, device=device)
    except Exception as exc:
        raise KitFailure("K6", detail=channel) from exc
    weak = {name: StorageWeakRef(received[impl.prefix + name].untyped_storage()) for name in names}
    # Where they really landed: a tensor keeps its device type, only the index is the receiver's.
    landed = ", ".join(sorted({str(received[impl.prefix + name].device) for name in names}))
    observer = guard.call("observer_factory", factory)
    try:
        rebuilt = _catalog_call("pop", impl.pop, received, observer)
    except KitFailure:
        raise
    except KeyError as exc:
        if exc.args and exc.args[0] not in names:
            raise KitFailure("K7", name=exc.args[0]) from exc
        raise KitFailure("K8", detail=f"KeyError: {exc}", device=landed) from exc
    except Exception as exc:
        raise KitFailure("K8", detail=f"{type(exc).__name__}: {exc}", device=landed) from exc
    _compare(guard, equal, output, rebuilt)
    del received, rebuilt
    _check_released(weak, observer)


def _catalog_call(stage: str, fn: Callable[[TensorDict, object], object], tensors: TensorDict, arg: object) -> object:
    """``fn(tensors, arg)``, a documented error of ``stage`` turned into its KitFailure."""
    try:
        return fn(tensors, arg)
    except RuntimeError as exc:
        text = str(exc)
        for entry in CATALOG.values():
            if entry.raised_by == stage and entry.matches(text):
                raise KitFailure(entry.code, name=entry.name_in(text)) from exc
        raise


def _check_wire(name: str, tensor: torch.Tensor) -> None:
    """What SGLang's send_tensor_dict over gloo would refuse or lose."""
    if type(tensor) is not torch.Tensor:
        raise KitFailure("K3", name=name, detail=type(tensor).__name__)
    if tensor.layout != torch.strided:
        raise KitFailure("K4", name=name, detail=str(tensor.layout))
    if tensor.dtype in GLOO_REJECTED_DTYPES:
        raise KitFailure("K2", name=name, detail=str(tensor.dtype))
    if not tensor.is_contiguous():
        raise KitFailure("K1", name=name)


def _compare(guard: Guard, equal: Equal | None, original: object, rebuilt: object) -> None:
    if equal is not None:
        if not guard.call("equal", equal, original, rebuilt):
            raise KitFailure("K9", detail="equal(original, rebuilt) returned False")
        return
    # An output with copy_to_host() is judged by what SGLang does with it after pop; one without
    # it only by its to_pp_tensors(), the weaker check.
    difference = (
        _lifecycle_difference(guard, original, rebuilt)
        if has_lifecycle(original)
        else _payload_difference(guard, original, rebuilt)
    )
    if difference:
        raise KitFailure("K9", detail=difference)


def _lifecycle_difference(guard: Guard, original: Any, rebuilt: Any) -> str | None:  # Any: has_lifecycle() said so
    """``copy_to_host(copy)`` on both outputs, as SGLang's scheduler calls it, then the host outputs compared."""
    if not has_lifecycle(rebuilt):
        raise KitFailure("K11", detail=type(rebuilt).__name__)
    hosts = []
    for side, output in (("original", original), ("rebuilt", rebuilt)):
        try:
            host = guard.call("copy_to_host", output.copy_to_host, to_host)
        except Exception as exc:
            raise KitFailure(
                "K13", detail=f"copy_to_host() of the {side} output raised {type(exc).__name__}: {exc}"
            ) from exc
        if not callable(getattr(host, "consume", None)):
            raise KitFailure("K12", detail=side, host=f"a {type(host).__name__}")
        hosts.append(host)
    try:
        found: str | None = guard.call("the comparison of the host outputs", difference, *hosts)
        return found
    except Exception as exc:
        raise KitFailure("K13", detail=f"comparing the host outputs raised {type(exc).__name__}: {exc}") from exc


def _payload_difference(guard: Guard, original: Any, rebuilt: object) -> str | None:  # Any: to_pp_tensors() is tried
    if not isinstance(rebuilt, PipelineParallelAuxiliaryOutput):
        return f"the rebuilt {type(rebuilt).__name__} has no to_pp_tensors() to compare; pass equal="
    before = dict(guard.call("to_pp_tensors", original.to_pp_tensors))
    after = dict(guard.call("to_pp_tensors", rebuilt.to_pp_tensors))
    if set(before) != set(after):
        return f"names {sorted(before)} became {sorted(after)}"
    for name, x in before.items():
        y = after[name]
        if not torch.is_tensor(y):
            return f"{name!r} became a {type(y).__name__}"
        if x.dtype != y.dtype:
            return f"{name!r} dtype {x.dtype} became {y.dtype}"
        if x.shape != y.shape:
            return f"{name!r} shape {tuple(x.shape)} became {tuple(y.shape)}"
        if not tensors_equal(x, y):
            return f"{name!r} values differ"
    return None


def _check_released(weak: dict[str, StorageWeakRef], observer: object) -> None:
    """Once the rebuilt output is dropped, nothing may keep the received tensors alive."""
    if any(not ref.expired() for ref in weak.values()):
        # Only a reference cycle can still free them; a full collection costs tens of ms with torch loaded.
        gc.collect()
    for name, ref in weak.items():
        if not ref.expired():
            raise KitFailure("K10", name=name, detail=_holder(observer, ref.cdata))


def _holder(observer: object, cdata: int) -> str:
    for attr, value in getattr(observer, "__dict__", {}).items():
        if _reaches(value, cdata, depth=3):
            return f"the observer's attribute {attr!r} holds it"
    return "something outside the rebuilt output holds it (the observer, or a cache it writes)"


def _reaches(value: object, cdata: int, depth: int) -> bool:
    """Whether ``value`` is, or holds within ``depth`` levels, a tensor on that storage."""
    if torch.is_tensor(value):
        return bool(value.untyped_storage()._cdata == cdata)
    if depth == 0:
        return False
    if isinstance(value, Mapping):
        items = list(value.values())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = list(getattr(value, "__dict__", {}).values())
    return any(_reaches(item, cdata, depth - 1) for item in items)
