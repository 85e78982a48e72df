"""What the observer conformance kit (:mod:`ppaux.testing.kit`) reports: one table.

Catalog errors (A1-A5, P1-P4) are reported with the catalog's own fixes; this table
holds only what the kit finds beyond them. The kit's messages, the plugin authors'
README section and the kit's tests are all built from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ppaux.core.errors import CATALOG


@dataclass(frozen=True)
class Finding:
    code: str
    kind: str
    template: str
    meaning: str
    fixes: tuple[str, ...]


_FINDINGS = (
    Finding(
        code="K1",
        kind="non_contiguous",
        template="auxiliary PP tensor {name!r} is not contiguous",
        meaning=(
            'gloo refuses it on the real wire ("input tensor has to be contiguous"); '
            "the relay does not make payloads contiguous for you."
        ),
        fixes=(
            "return `tensor.contiguous()` from `to_pp_tensors()` (slices, transposes and `expand` make views)",
            "or build the tensor contiguous in `after_sample` (e.g. `topk(k)` instead of slicing a wider `topk`)",
        ),
    ),
    Finding(
        code="K2",
        kind="dtype",
        template="auxiliary PP tensor {name!r} has dtype {detail}, which gloo cannot carry",
        meaning="send/recv over gloo rejects quantized dtypes; the stage would crash on send.",
        fixes=(
            "send the integer representation (`tensor.int_repr()`) and the scale/zero point as tensors of their own",
            "or dequantize before `to_pp_tensors()`",
        ),
    ),
    Finding(
        code="K3",
        kind="subclass",
        template="auxiliary PP tensor {name!r} is a {detail}; the receiving stage gets a plain torch.Tensor",
        meaning=(
            "Only (device type, dtype, shape) and the bytes cross the wire; the subclass and its attributes are lost."
        ),
        fixes=(
            (
                "return plain tensors from `to_pp_tensors()` (e.g. `tensor.as_subclass(torch.Tensor)` or "
                "`tensor.detach()` for a Parameter)"
            ),
            "send what the subclass carries as tensors of their own and rebuild it in `from_pp_tensors()`",
        ),
    ),
    Finding(
        code="K4",
        kind="layout",
        template="auxiliary PP tensor {name!r} has layout {detail}; the relay carries only dense tensors",
        meaning="The receiver allocates a dense tensor of the same shape; sparse and other layouts do not survive.",
        fixes=(
            "return `tensor.to_dense()` from `to_pp_tensors()`",
            "or send the sparse parts (indices, values) as dense tensors of their own",
        ),
    ),
    Finding(
        code="K5",
        kind="collision",
        template="auxiliary PP tensor name {name!r} collides with {detail}",
        meaning=(
            "Aux names share the PP dict with SGLang's own keys and with other outputs' names; a shared name means A5 "
            "or a confusing dict."
        ),
        fixes=(
            "namespace every name with your plugin's name, e.g. 'my_plugin.scores'",
            "never put the reserved prefix in a name yourself: add writes it",
        ),
    ),
    Finding(
        code="K6",
        kind="relay_failed",
        template="the PP relay over {detail} failed on this output",
        meaning="The output passed the kit's static checks but the wire still refused it.",
        fixes=(
            "read the relay's error in the traceback above; make each payload tensor a plain, contiguous, dense tensor",
        ),
    ),
    Finding(
        code="K7",
        kind="missing_tensor",
        template="from_pp_tensors() reads {name!r}, which to_pp_tensors() did not send",
        meaning="The observer on the first stage needs a tensor that the last stage never put in the PP dict.",
        fixes=(
            "return every tensor that `from_pp_tensors()` reads from `to_pp_tensors()`",
            "use the same name constants on both sides",
        ),
    ),
    Finding(
        code="K8",
        kind="observer_raised",
        template="from_pp_tensors() raised {detail} on tensors received on {device}",
        meaning=(
            "The observer cannot rebuild from what arrives: the receiver allocates fresh tensors on its own device."
        ),
        fixes=(
            (
                "don't assume the sender's device in `from_pp_tensors()`: use `tensors[name].device`, or `.to(device)` "
                "explicitly"
            ),
            "rebuild only from the mapping you are given (names, dtypes and shapes as `to_pp_tensors()` sent them)",
        ),
    ),
    Finding(
        code="K9",
        kind="mismatch",
        template="the rebuilt output differs from the original after the relay: {detail}",
        meaning="The first stage silently gets a different output than the last stage produced.",
        fixes=(
            "make `from_pp_tensors()` the exact inverse of `to_pp_tensors()`: same names, dtypes, shapes and values",
            (
                "send derived values instead of recomputing them on the first stage; pass `equal=` if your output "
                "compares otherwise"
            ),
            (
                "rebuild the structure `copy_to_host()` reads (shapes, nesting), not only the tensors "
                "`to_pp_tensors()` sends"
            ),
        ),
    ),
    Finding(
        code="K10",
        kind="retained",
        template="received tensor {name!r} is still referenced after pop: {detail}",
        meaning="The observer is long-lived; keeping one step's received tensors pins that memory and mixes steps.",
        fixes=(
            "keep per-step tensors only in the output that `from_pp_tensors()` returns, not on the observer",
            "don't store the mapping passed to `from_pp_tensors()`; take the tensors you need out of it",
        ),
    ),
    Finding(
        code="K11",
        kind="no_copy_to_host",
        template="the rebuilt {detail} has no copy_to_host(), which SGLang's scheduler calls right after pop",
        meaning=(
            "The original output has copy_to_host(); SGLang calls it on the rebuilt one "
            "(copy_auxiliary_output_to_cpu), so the scheduler would crash with an AttributeError one step after pop."
        ),
        fixes=(
            "return an object of the output's own class from `from_pp_tensors()`",
            "or implement `copy_to_host(copy_tensor)` on the class `from_pp_tensors()` returns",
        ),
    ),
    Finding(
        code="K12",
        kind="no_consume",
        template="copy_to_host() of the {detail} output returned {host}, which has no consume()",
        meaning=(
            "SGLang calls consume(batch, commits) on what copy_to_host() returns, before it streams the response: "
            "without it the scheduler crashes."
        ),
        fixes=("return a host output with `consume(batch, commits)` from `copy_to_host()`",),
    ),
    Finding(
        code="K13",
        kind="lifecycle_raised",
        template="{detail}",
        meaning=(
            "SGLang copies every rebuilt output to the host with copy_to_host(copy_tensor); the kit does the same, "
            "with a copy_tensor that returns a CPU copy, and compares the host outputs field by field."
        ),
        fixes=(
            (
                "make `copy_to_host()` work on the tensors `from_pp_tensors()` was given (fresh tensors on the "
                "receiver's device)"
            ),
            "pass `equal=` when your host outputs cannot be compared field by field",
        ),
    ),
    Finding(
        code="K14",
        kind="hang",
        template="{detail}",
        meaning=(
            "Every step that runs your code (add calls `to_pp_tensors()`, pop `from_pp_tensors()`, then "
            "`copy_to_host()` and the comparison or `equal`) runs under a time limit; this one did not return within "
            "it. In SGLang the stage would stall every request in the batch. The message names the call, the limit and "
            "where it was stuck."
        ),
        fixes=(
            (
                "look for a loop that never ends or a wait that is never woken (a lock, a queue, a CUDA sync, a "
                "`recv`) in `to_pp_tensors()`, `from_pp_tensors()` or `copy_to_host()`, at the frame the message shows"
            ),
            (
                "if the step is merely slow, raise the limit: `check_observer(..., timeout=SECONDS)` (or "
                "`--ppaux-timeout` for the fixture)"
            ),
        ),
    ),
    Finding(
        code="K15",
        kind="crash",
        template="{detail}",
        meaning=(
            "A step that runs your code ended the process it ran in (a fatal signal such as SIGSEGV, or an exit), in a "
            "forked child where the kit runs it. In SGLang the scheduler process would die. The message names the "
            "call, the exit status or signal and, for a signal, where it struck."
        ),
        fixes=(
            (
                "a native extension (C++/CUDA) that crashes: run the step under `python -X faulthandler` or "
                "`gdb --args python ...` to see where"
            ),
            (
                "don't end the process from plugin code (`os._exit()`, `os.abort()`, a library's fatal-error handler): "
                "raise an exception instead"
            ),
        ),
    ),
)

FINDINGS: dict[str, Finding] = {f.code: f for f in _FINDINGS}
BY_KIND: dict[str, Finding] = {f.kind: f for f in _FINDINGS}

# Measured with a real 2-process gloo send/recv of every torch dtype (torch 2.13, CPU):
# everything except the quantized dtypes crosses, float8 and uint16-64 included; the
# test tests/test_kit_gloo_dtypes.py re-measures and pins this.
GLOO_REJECTED_DTYPES = frozenset(
    dt
    for dt in (getattr(torch, n, None) for n in ("qint8", "qint32", "quint8", "quint4x2", "quint2x4"))
    if dt is not None
)

# Keys SGLang's last stage writes into the same PP dict (scheduler_pp_mixin.py and
# managers/utils.py, 0.5.23); spec_* and draft_* are whole families.
SGLANG_KEYS = frozenset(
    (
        "next_token_ids",
        "next_token_logprobs",
        "next_token_top_logprobs_val",
        "next_token_top_logprobs_idx",
        "next_token_token_ids_logprobs_val",
        "next_token_token_ids_logprobs_idx",
        "extend_input_len_per_req",
        "extend_logprob_start_len_per_req",
        "__msg_type__",
        "__skip__",
    )
)
SGLANG_KEY_FAMILIES = ("spec_", "draft_")
# Names so plain that a second output in the same dict (another plugin, a composite
# output) is likely to use them too; add would then raise A5.
GENERIC_NAMES = frozenset(
    (
        "scores",
        "values",
        "indices",
        "ids",
        "token_ids",
        "tokens",
        "logits",
        "logprobs",
        "probs",
        "mask",
        "output",
        "hidden_states",
    )
)


def collision(name: str, prefix: str) -> str | None:
    """What ``name`` collides with, or ``None``: the reserved prefix, SGLang's keys, generic names."""
    if name.startswith(prefix):
        return "the reserved prefix (add would write it twice)"
    if name in SGLANG_KEYS or name.startswith(SGLANG_KEY_FAMILIES):
        return "a key SGLang writes into the same PP dict"
    if name in GENERIC_NAMES:
        return "a generic name another output in the same PP dict may use (add would raise A5)"
    return None


def message(code: str, *, name: object = None, **fields: str) -> str:
    """The exact text of a kit failure: the headline, then one line per fix.

    ``code`` is a kit code (K1-K15) or a catalog code (A1-P4, fixes from the catalog).
    """
    if code in CATALOG:
        entry = CATALOG[code]
        head = f"{code} from {entry.raised_by}: {entry.message(name)}"
        fixes = entry.fixes
    else:
        finding = FINDINGS[code]
        # ``fields`` fills the finding's other placeholders (``detail``, ``device``).
        head = f"{code} {finding.kind}: " + finding.template.format(name=name, **fields)
        fixes = finding.fixes
    return "\n".join([head, "how to fix:"] + [f"  - {fix}" for fix in fixes])


def markdown_table() -> str:
    """The plugin authors' table of kit findings."""
    rows = ["| code | kind | what the kit says | what it means | how to fix |", "| --- | --- | --- | --- | --- |"]
    for f in _FINDINGS:
        rows.append(f"| {f.code} | {f.kind} | `{f.template}` | {f.meaning} | {'; '.join(f.fixes)} |")
    return "\n".join(rows)
