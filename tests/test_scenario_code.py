"""A counterexample's values as the code a regression file binds them with: the names a reader sees,
the keys as written, and the values that cannot be written at all."""

from __future__ import annotations

import pytest
import torch
from ppaux_strategies import PPOutput

from ppaux.testing.scenario import Call, Unwritable, describe, literal, tensor_expr


def test_each_tensor_is_named_after_the_key_it_sits_under_as_a_reader_would_name_it():
    # Prefix removed, underscores trimmed, lower case; a keyword or a name with no letters gets a
    # plain name, and a name taken twice gets a number.
    keys = ["x", "p.x", "x ", "__scores", "Xs", "!!", "class", 0, ""]
    d = {key: torch.zeros(1) for key in keys}
    step = describe([Call("pop", d, None, list(d.items()))], "p.")["steps"][0]
    names = ["x", "x_2", "x_3", "scores", "xs", "value", "value_class", "tensor", "tensor_2"]
    assert step["setup"] == [f"{name} = torch.zeros((1,))" for name in names] + [
        "tensors = {'x': x, _OUTPUT_PREFIX + 'x': x_2, 'x ': x_3, '__scores': scores, 'Xs': xs, '!!': value, "
        "'class': value_class, 0: tensor, '': tensor_2}"
    ]


def test_tensors_inside_keys_lists_dicts_and_an_outputs_list_payload_are_bound_to_names():
    key, listed, nested, paid = torch.ones(1), torch.ones(2), torch.ones(3), torch.ones(4)
    d = {key: 1, "p.y": 1, "l": [listed], "n": {"t": nested}}
    step = describe([Call("add", d, PPOutput([paid]), list(d.items()))], "p.")["steps"][0]
    assert step["setup"] == [
        "key = torch.tensor([1.0])",
        "value = torch.tensor([1.0, 1.0])",
        "t = torch.tensor([1.0, 1.0, 1.0])",
        "tensors = {key: 1, _OUTPUT_PREFIX + 'y': 1, 'l': [value], 'n': {'t': t}}",
        "value_2 = torch.tensor([1.0, 1.0, 1.0, 1.0])",
        "output = PPOutput([value_2])",
    ]


def test_a_dict_whose_key_the_test_renamed_between_calls_is_written_afresh():
    # Same value object, same length: only the key says the test changed the dict.
    d = {"a": 1}
    first = Call("pop", d, None, [("a", 1)], [("a", 1)])
    steps = describe([first, Call("pop", d, None, [("b", 1)])], "p.")["steps"]
    assert [(s["dict"], s["setup"]) for s in steps] == [
        ("tensors", ["tensors = {'a': 1}"]),
        ("tensors_2", ["tensors_2 = {'b': 1}"]),
    ]


@pytest.mark.parametrize(
    "tensor, expr",
    [
        (torch.arange(6.0)[2:], "torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).as_strided((4,), (1,), 2)"),
        (torch.zeros(2, 3, 4), "torch.zeros((2, 3, 4))"),
        (torch.zeros(2, 3), "torch.zeros((2, 3))"),
        (torch.zeros(3, 1), "torch.zeros((3, 1))"),
    ],
)
def test_a_contiguous_tensor_is_made_directly_and_a_view_from_its_whole_storage(tensor, expr):
    assert tensor_expr(tensor) == expr


def test_a_dict_literal_keeps_each_entry():
    assert literal({"a": 1, "b": (2.5, None)}) == "{'a': 1, 'b': (2.5, None)}"


def test_a_tuple_subclass_is_not_written_as_a_plain_tuple():
    with pytest.raises(Unwritable) as info:
        literal(torch.Size([2]))
    assert str(info.value) == "a Size value (torch.Size([2])) cannot be written as code"
