"""The public strategies: arguments validated up front, the promised variety drawn, small minimal examples."""

from __future__ import annotations

import ppaux_strategies as ps
import pytest
import torch
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from ppaux_strategies.tensors import ALL_DTYPES, supported_dtypes

# find() inherits unset settings from the active profile: name every one these assertions depend on.
FIND = settings(
    database=None,
    max_examples=2000,
    derandomize=True,
    phases=[Phase.generate, Phase.shrink],
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: ps.devices(include_meta=1), "include_meta=1 must be of type bool, not int"),
        (lambda: ps.dtypes(device=3), "device=3 must be of type str or device, not int"),
        (lambda: ps.shapes(min_dims=-1), "min_dims=-1 must be between 0 and 32"),
        (lambda: ps.shapes(min_dims=3, max_dims=2), "min_dims=3 must not exceed max_dims=2"),
        (lambda: ps.shapes(max_side=True), "max_side=True must be of type int, not bool"),
        (lambda: ps.shapes(min_side=2, max_side=1), "min_side=2 must not exceed max_side=1"),
        (lambda: ps.tensors(dtype="float32"), "dtype='float32' must be of type dtype or SearchStrategy, not str"),
        (lambda: ps.tensors(shape=[2]), "shape=[2] must be of type tuple or SearchStrategy, not list"),
        (lambda: ps.tensors(shape=(2, -1)), "every side of shape=-1 must be at least 0"),
        (
            lambda: ps.tensors(views=("diagonal",)),
            (
                "views=('diagonal',) must be a non-empty selection of "
                "('contiguous', 'transpose', 'step_slice', 'expand', 'size1_stride')"
            ),
        ),
        (
            lambda: ps.tensors(views=()),
            (
                "views=() must be a non-empty selection of ('contiguous', "
                "'transpose', 'step_slice', 'expand', 'size1_stride')"
            ),
        ),
        (lambda: ps.tensors(device=0), "device=0 must be of type str or device or SearchStrategy, not int"),
        (lambda: ps.tensors(device="gpu0"), "device='gpu0' is not a device torch knows"),
        (lambda: ps.prefixes(sglang_only="yes"), "sglang_only='yes' must be of type bool, not str"),
        (lambda: ps.aux_names(prefix=""), "prefix must be a non-empty str"),
        (lambda: ps.aux_names(prefix=None), "prefix=None must be of type str, not NoneType"),
        (lambda: ps.transport_dicts(max_extra=257), "max_extra=257 must be between 0 and 256"),
        (lambda: ps.transport_dicts(max_aux=0), "max_aux=0 must be between 1 and 256"),
        (
            lambda: ps.transport_dicts(tensors=torch.zeros(1)),
            "tensors=tensor([0.]) must be of type SearchStrategy, not Tensor",
        ),
        (lambda: ps.aux_payloads(min_size=0), "min_size=0 must be between 1 and 64"),
        (lambda: ps.aux_payloads(min_size=3, max_size=2), "min_size=3 must not exceed max_size=2"),
        (lambda: ps.aux_payloads(collide_with=[1]), "collide_with=[1] must be a mapping (a PP dict)"),
        (lambda: ps.aux_outputs(allow_none=None), "allow_none=None must be of type bool, not NoneType"),
        (
            lambda: ps.observers(modes=("explode",)),
            (
                "modes=('explode',) must be a non-empty selection of ('rebuild', "
                "'return_none', 'raise', 'drop_one', 'add_one', 'clear')"
            ),
        ),
        (lambda: ps.observers(allow_not_pp=0), "allow_not_pp=0 must be of type bool, not int"),
    ],
)
def test_bad_arguments_fail_up_front_with_a_clear_message(build, message):
    with pytest.raises(InvalidArgument) as info:
        build()
    assert str(info.value) == message


def test_devices_are_cpu_each_visible_cuda_and_meta_on_request():
    assert ps.visible_devices() == ("cpu", *(f"cuda:{i}" for i in range(torch.cuda.device_count())))
    assert ps.visible_devices(include_meta=True)[-1] == "meta"
    assert find(ps.devices(include_meta=True), lambda d: d.type == "meta", settings=FIND) == torch.device("meta")


def test_every_dtype_torch_has_is_drawn():
    assert {torch.bool, torch.uint8, torch.int64, torch.float16, torch.bfloat16, torch.complex128} <= set(ALL_DTYPES)
    for dtype in supported_dtypes("cpu"):
        assert find(ps.dtypes(), lambda d, dtype=dtype: d == dtype, settings=FIND) == dtype


@pytest.mark.parametrize(
    "what, condition",
    [
        ("0-d", lambda t: t.dim() == 0),
        ("empty", lambda t: t.numel() == 0),
        ("non-contiguous", lambda t: not t.is_contiguous()),
        ("expanded", lambda t: 0 in t.stride() and t.numel() > 1),
        ("huge on meta", lambda t: t.device.type == "meta" and t.numel() > 2**32),
        ("complex", lambda t: t.dtype.is_complex),
        (
            "contiguous with a non-standard stride",
            lambda t: t.is_contiguous() and t.dim() and t.numel() and t.stride()[-1] != 1,
        ),
    ],
)
def test_tensors_reach_every_promised_kind(what, condition):
    assert condition(find(ps.tensors(include_meta=True), condition, settings=FIND)), what


def test_pinned_aspects_are_respected():
    t = find(
        ps.tensors(dtype=torch.int8, shape=(2, 3), device="cpu", views=("transpose",)), lambda t: True, settings=FIND
    )
    assert (t.dtype, t.shape, t.device.type, t.is_contiguous()) == (torch.int8, (2, 3), "cpu", False)
    zeros = find(ps.tensors(fill=False, shape=(3,)), lambda t: True, settings=FIND)
    assert torch.equal(zeros, torch.zeros(3))
    meta = find(
        ps.tensors(device="meta", views=("step_slice",)),
        lambda t: t.dim() == 2 and t.shape[0] > 1 and t.shape[1] > 0,
        settings=FIND,
    )
    assert meta.device.type == "meta" and not meta.is_contiguous()


@pytest.mark.parametrize(
    "strategy, message",
    [
        (ps.tensors(dtype=st.just("float32")), "dtype='float32' must be of type dtype, not str"),
        (ps.tensors(shape=st.just([2])), "shape=[2] must be of type tuple, not list"),
        (ps.tensors(shape=st.just((2, -1))), "every side of shape=-1 must be at least 0"),
        (ps.tensors(device=st.just(0)), "device=0 must be of type str or device, not int"),
        (ps.tensors(device=st.just("gpu0")), "device='gpu0' is not a device torch knows"),
    ],
)
def test_a_strategy_for_an_aspect_has_its_draws_checked_as_given_values_are(strategy, message):
    with pytest.raises(InvalidArgument) as info:
        find(strategy, lambda t: True, settings=FIND)
    assert str(info.value) == message


def test_dtype_shape_and_device_may_each_be_drawn_from_a_strategy():
    composed = ps.tensors(dtype=ps.dtypes(), shape=ps.shapes(max_dims=2), device=st.sampled_from(["cpu", "meta"]))
    t = find(composed, lambda t: t.device.type == "meta" and t.dtype.is_complex and t.dim() == 2, settings=FIND)
    assert (t.device.type, t.dtype, t.shape) == ("meta", torch.complex64, (0, 0))

    # A shape strategy is kept on meta too: no huge sides there unless it draws them.
    @given(ps.tensors(shape=ps.shapes(max_dims=2), device="meta"))
    @settings(max_examples=200, database=None, derandomize=True)
    def small_on_meta(t):
        assert t.dim() <= 2 and all(side <= 4 for side in t.shape)

    small_on_meta()
    assert find(
        ps.tensors(shape=ps.shapes(min_side=7, max_side=7), device=torch.device("cpu")),
        lambda t: t.dim() == 1,
        settings=FIND,
    ).shape == (7,)


def test_a_failing_value_shrinks_to_one_element_of_the_simplest_non_zero_value():
    def all_zero(t):
        assert not (t != 0).any()

    minimal = find(ps.tensors(dtype=torch.float32, shape=(3,)), lambda t: not _passes(all_zero, t), settings=FIND)
    assert ps.tensors_equal(minimal, torch.tensor([0.0, 0.0, 1.0]))
    assert (minimal.device.type, minimal.stride()) == ("cpu", (1,))


def _passes(check, value):
    try:
        check(value)
    except AssertionError:
        return False
    return True


def test_a_tensor_at_the_drawn_element_limit_still_shrinks_element_by_element():
    at_limit = ps.tensors(dtype=torch.int64, shape=(ps.MAX_DRAWN_ELEMENTS,), device="cpu", views=("contiguous",))
    t = find(at_limit, lambda t: bool(t.any()), settings=FIND)
    assert t.tolist() == [0] * (ps.MAX_DRAWN_ELEMENTS - 1) + [1]


@pytest.mark.parametrize("dtype", supported_dtypes("cpu"))
def test_every_dtype_draws_its_elements_and_shrinks_them_towards_one(dtype):
    t = find(
        ps.tensors(dtype=dtype, shape=(2,), device="cpu", views=("contiguous",)),
        lambda t: bool((t != 0).all()),
        settings=FIND,
    )
    simplest = torch.tensor([1j, 1j] if dtype.is_complex else [1, 1], dtype=dtype)
    assert ps.tensors_equal(t, simplest)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint64])
def test_integer_elements_reach_both_ends_of_the_dtype(dtype):
    info = torch.iinfo(dtype)
    strategy = ps.tensors(dtype=dtype, shape=(2,), device="cpu")
    for end in (info.min, info.max):
        # tolist(): uint64 has no max() in torch.
        assert end in find(strategy, lambda t, end=end: end in t.tolist(), settings=FIND).tolist()


def test_float_elements_reach_nan_and_infinity_and_narrow_floats_stay_finite():
    wide = ps.tensors(dtype=torch.float32, shape=(2,), device="cpu")
    find(wide, lambda t: bool(t.isnan().any()), settings=FIND)
    find(wide, lambda t: bool(t.isinf().any()), settings=FIND)

    @given(ps.tensors(dtype=st.sampled_from([torch.bfloat16, torch.float8_e4m3fn]), device="cpu"))
    @settings(max_examples=200, database=None, derandomize=True)
    def finite(t):
        assert t.float().isfinite().all()

    finite()


@pytest.mark.parametrize("dtype", [torch.float32, torch.uint8, torch.int8])
def test_tensors_beyond_the_drawn_element_limit_get_one_fill(dtype):
    big = ps.tensors(dtype=dtype, shape=(ps.MAX_DRAWN_ELEMENTS + 1,), device="cpu", views=("contiguous",))
    assert not find(big, lambda t: True, settings=FIND).any()
    t = find(big, lambda t: bool((t != 0).any()), settings=FIND)
    assert t.shape == (ps.MAX_DRAWN_ELEMENTS + 1,) and len(set(t.tolist())) > 2


def test_minimal_examples_read_well():
    """A failure shrinks to one key and one small tensor."""
    d = find(ps.transport_dicts(), lambda d: True, settings=FIND)
    assert (
        list(d) == ["next_token_ids"] and d["next_token_ids"].shape == () and d["next_token_ids"].dtype == torch.float32
    )
    out = find(ps.aux_outputs(), lambda o: True, settings=FIND)
    assert repr(out) == "PPOutput({'0': tensor(0.)})"
    assert repr(find(ps.observers(), lambda o: True, settings=FIND)) == "RecordingObserver('rebuild')"
    assert find(ps.prefixes(), lambda p: True, settings=FIND) == ps.SGLANG_PREFIX


@given(data=st.data(), prefix=ps.prefixes())
def test_transport_dicts_keep_ordinary_keys_clear_of_the_prefix(data, prefix):
    d = data.draw(ps.transport_dicts(prefix=prefix))
    assert not [k for k in d if isinstance(k, str) and k.startswith(prefix)]
    assert all(isinstance(k, str) for k in d)
    assert all(isinstance(v, str) for k, v in d.items() if k == "__msg_type__")
    with_aux = data.draw(ps.transport_dicts(prefix=prefix, aux=True, non_str_keys=True))
    assert [k for k in with_aux if isinstance(k, str) and k.startswith(prefix)]
    assert [k for k in with_aux if not isinstance(k, str)]


@pytest.mark.parametrize("prefix", ["_", "__", "__msg"])
@given(data=st.data())
def test_a_prefix_that_would_claim_msg_type_draws_no_msg_type(data, prefix):
    """Found by the CI fuzz run: with prefix "_", "__msg_type__" was drawn as an ordinary key, and a correct
    transport, taking it for an aux key with a str value, was failed by pop.4's test."""
    d = data.draw(ps.transport_dicts(prefix=prefix))
    assert not [k for k in d if isinstance(k, str) and k.startswith(prefix)]


@pytest.mark.parametrize("prefix", [ps.SGLANG_PREFIX, "aux.", "next_"])
def test_near_prefix_keys_only_resemble_the_prefix(prefix):
    keys = ps.near_prefix_keys(prefix)
    assert keys and not [k for k in keys if k.startswith(prefix)]
    assert prefix[:-1] in keys or not prefix.endswith(".")


def test_malformed_payloads_reach_each_defect():
    bad = ps.aux_payloads(valid=False, collide_with={ps.SGLANG_PREFIX + "taken": torch.zeros(1)})
    for condition in (
        lambda p: p == {},
        lambda p: p is None,
        lambda p: bool(p) and any(not isinstance(n, str) for n in p),
        lambda p: bool(p) and "" in p,
        lambda p: bool(p) and any(not torch.is_tensor(v) for v in p.values()),
        lambda p: bool(p) and "taken" in p,
    ):
        find(bad, condition, settings=FIND)


def test_invalid_outputs_include_every_kind():
    for kind in (ps.NotPPOutput, ps.RaisingPPOutput, ps.PPOutput):
        find(ps.aux_outputs(valid=False), lambda o, kind=kind: isinstance(o, kind), settings=FIND)
    find(ps.aux_outputs(allow_none=True), lambda o: o is None, settings=FIND)
    for mode in ("return_none", "raise", "drop_one", "add_one", "clear"):
        find(ps.observers(), lambda o, mode=mode: getattr(o, "mode", None) == mode, settings=FIND)
    find(ps.observers(), lambda o: isinstance(o, ps.NotPPObserver), settings=FIND)
    find(ps.observers(), lambda o: o is None, settings=FIND)


@given(prefix=ps.prefixes(sglang_only=True), observer=ps.observers(allow_none=False, allow_not_pp=False))
def test_switched_off_choices_are_never_drawn(prefix, observer):
    assert prefix == ps.SGLANG_PREFIX
    assert isinstance(observer, ps.RecordingObserver)


def test_tensors_equal_compares_every_bit_dtype_and_shape():
    a = torch.tensor([1.0, float("nan")])
    assert ps.tensors_equal(a, a.clone()) and not ps.tensors_equal(a, a.to(torch.float64))
    assert not ps.tensors_equal(a, a.reshape(2, 1)) and not ps.tensors_equal(a, torch.tensor([1.0, 2.0]))
    assert ps.tensors_equal(torch.empty(0, 3), torch.empty(0, 3))
    assert ps.tensors_equal(a.to("meta"), a.to("meta")) and not ps.tensors_equal(a.to("meta"), a)


def test_doubles_behave_as_documented():
    with pytest.raises(ValueError):
        ps.RecordingObserver("explode")
    obs = ps.RecordingObserver("add_one")
    given_dict = {"a": torch.zeros(1)}
    assert (
        repr(obs.from_pp_tensors(given_dict)) == "Rebuilt(['a'])" and "added by observer" in given_dict and obs.mutates
    )
    assert repr(ps.NotPPObserver()) == "NotPPObserver()" and repr(ps.NotPPOutput()) == "NotPPOutput()"
    assert repr(ps.RaisingPPOutput()) == "RaisingPPOutput()"


@given(t=ps.tensors(views=ps.CONTIGUOUS_VIEWS, device="cpu"))
def test_contiguous_views_are_what_gloo_sends_as_is(t):
    assert t.is_contiguous()
