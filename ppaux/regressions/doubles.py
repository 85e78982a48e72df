"""The source of what a regression test file defines beside its tests: the output and observer
doubles (standalone twins of :mod:`ppaux_strategies.doubles`), the trap tensor, the dict
assertion, and the child-process runner of hang and crash tests. Standard library and torch only.
"""

from __future__ import annotations

# name -> (source, the names it needs defined before it)
SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ObserverFailure": (
        '''
class ObserverFailure(Exception):
    """Raised on purpose by a double: add and pop must let it through unchanged."""
''',
        (),
    ),
    "PPOutput": (
        '''
class PPOutput:
    """An auxiliary output whose to_pp_tensors() returns `payload`, counting its calls."""

    def __init__(self, payload):
        self.payload = payload
        self.calls = 0

    def to_pp_tensors(self):
        self.calls += 1
        return self.payload
''',
        (),
    ),
    "RaisingPPOutput": (
        '''
class RaisingPPOutput:
    """An auxiliary output whose to_pp_tensors() raises its `error`."""

    def __init__(self):
        self.calls = 0
        self.error = ObserverFailure("to_pp_tensors failed")

    def to_pp_tensors(self):
        self.calls += 1
        raise self.error
''',
        ("ObserverFailure",),
    ),
    "NotPPOutput": (
        '''
class NotPPOutput:
    """An auxiliary output without to_pp_tensors: it does not support PP transport."""
''',
        (),
    ),
    "Rebuilt": (
        '''
class Rebuilt:
    """What RecordingObserver rebuilds: the names it was handed."""

    def __init__(self, names):
        self.names = names
''',
        (),
    ),
    "RecordingObserver": (
        '''
class RecordingObserver:
    """A sampling observer that keeps a copy of each dict it is handed (`handed`) and what it
    returned. `mode`: "rebuild" returns a new Rebuilt, "return_none" returns None, "raise" raises
    its `error`; "drop_one", "add_one" and "clear" change the dict they were handed, then rebuild."""

    def __init__(self, mode="rebuild"):
        self.mode = mode
        self.handed = []
        self.returned = []
        self.error = ObserverFailure("from_pp_tensors failed")

    def from_pp_tensors(self, tensors):
        self.handed.append(dict(tensors))
        if self.mode == "raise":
            raise self.error
        result = None if self.mode == "return_none" else Rebuilt(list(tensors))
        if self.mode == "drop_one":
            del tensors[next(iter(tensors))]
        elif self.mode == "add_one":
            tensors["added by observer"] = next(iter(tensors.values()))
        elif self.mode == "clear":
            tensors.clear()
        self.returned.append(result)
        return result
''',
        ("ObserverFailure", "Rebuilt"),
    ),
    "NotPPObserver": (
        '''
class NotPPObserver:
    """A sampling observer without from_pp_tensors: it does not support PP transport."""
''',
        (),
    ),
    "TrapTensor": (
        '''
class TrapTensor(torch.Tensor):
    """A tensor that fails on any torch operation: add and pop must carry it without reading it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.__repr__, torch.Tensor.__format__, torch.Tensor.__hash__):
            return super().__torch_function__(func, types, args, kwargs)
        name = getattr(func, "__name__", func)
        raise AssertionError(f"expected add and pop never to touch an aux tensor, got a call of {name}")
''',
        (),
    ),
}

TEST_CASE = '''
class PPDictTestCase(unittest.TestCase):
    def assertEntries(self, tensors, expected):
        """`tensors` holds exactly the keys of `expected`, in its order; each tensor the very same object."""
        self.assertEqual(list(tensors), [key for key, _ in expected])
        for key, value in expected:
            if torch.is_tensor(value):
                self.assertIs(tensors[key], value, f"the tensor under {key!r} is not the same object")
            else:
                self.assertEqual(tensors[key], value)
'''

RUN_IN_CHILD = '''
def _run_calls(calls):
    try:
        calls()
    except Exception:
        pass  # raising is an answer: what these tests check is that the calls end


def run_in_child(calls, seconds):
    """The exit status of a child process that runs `calls()`; None when it ran past `seconds` (it
    is then killed): a hang or a crash fails the test instead of stopping the test run."""
    start_method = "fork" if sys.platform == "linux" else "spawn"
    child = multiprocessing.get_context(start_method).Process(target=_run_calls, args=(calls,))
    child.start()
    child.join(seconds)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return child.exitcode
'''


def needed(names: list[str]) -> list[str]:
    """``names`` with what they need, each once, in an order where every class follows what it uses."""
    out: list[str] = []

    def visit(name: str) -> None:
        for dep in SOURCES[name][1]:
            visit(dep)
        if name not in out:
            out.append(name)

    for name in names:
        visit(name)
    return out


def source(names: list[str]) -> str:
    """The classes ``names`` (and what they need) as module-level source."""
    return "\n".join(SOURCES[name][0] for name in needed(names))
