"""Why ONNX Runtime refuses to open a model, in the user's terms: operators older than any it runs (with the way
out: onnx's version converter), ops of a domain it has no kernels for (training ops, custom ops), a locale the
machine lacks. What ONNX Runtime supports is read from ONNX Runtime itself: its table of kernels, and the
opset it says it guarantees.

Every page that opens a session (Partition, Benchmark, Profile, Quantize, Export's check) goes through
``explain_refusal``; a refusal it does not recognise keeps ONNX Runtime's own words, after ours.
"""

from __future__ import annotations

import contextlib
import functools
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.errors import OldOpsetError, PartitionError, RuntimeRefusedError, WorkbenchError, brief
from core.i18n import _, ngettext
from core.model.proto import walk_graphs
from core.runtime.ort import capture_ort_log, ort_message

if TYPE_CHECKING:
    import onnx

__all__ = [
    "DEFAULT_UPGRADE_OPSET",
    "MissingKernel",
    "explain_refusal",
    "kernel_domains",
    "missing_kernels",
    "old_opset_refusal",
    "onnx_release",
    "ort_minimum_opset",
    "standard_opset",
]

# the opset an upgrade goes to unless asked otherwise: the Export page's default, run by every ONNX Runtime
# since 1.14 and by every quantizer; onnx's converter goes up to onnx.defs.onnx_opset_version()
DEFAULT_UPGRADE_OPSET = 18
TRAINING_DOMAIN = "ai.onnx.preview.training"
_STANDARD = ("", "ai.onnx")
_NOT_REGISTERED = re.compile(r"(?:Fatal error: )?([\w.]+):(\w+)\((-?\d+)\) is not a registered function/op")
_NO_KERNEL = re.compile(r"Could not find an implementation for (\w+)\((\d+)\) node with name '([^']*)'")
_LOCALE = re.compile(r"Failed to construct locale with name:\s*([^:\s]+)")
_GUARANTEE = re.compile(r"opset version (\d+) or above for opset domain 'ai\.onnx'")


@dataclass(frozen=True, kw_only=True)
class MissingKernel:
    """An operator version a model uses that ONNX Runtime has no kernel for."""

    op: str
    domain: str  # "" for ai.onnx
    version: int  # the operator's version at the model's opset (its "since version")
    nodes: int  # how many nodes of the model use it
    first: int | None  # the oldest version ONNX Runtime has a kernel for; None: no version at all

    @property
    def text(self) -> str:
        name = f"{self.domain}:{self.op}" if self.domain else self.op
        since = f"its kernels start at {self.op}-{self.first}" if self.first else "no version at all"
        return f"{name}-{self.version} ({self.nodes} node{'s' * (self.nodes != 1)}; {since})"


@functools.cache
def _kernels() -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(domain, op) -> the version ranges of ONNX Runtime's CPU kernels for it (the CPU provider takes every node
    no other provider took, so what it lacks, no session has)."""
    from onnxruntime.capi import _pybind_state

    table: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for kernel in _pybind_state.get_all_opkernel_def():
        if kernel.provider == "CPUExecutionProvider":
            low, high = kernel.version_range
            table.setdefault((kernel.domain, kernel.op_name), []).append((int(low), int(high)))
    return table


def kernel_domains() -> list[str]:
    """The operator domains this ONNX Runtime has kernels for, as people write them (ai.onnx for "")."""
    return sorted({domain or "ai.onnx" for domain, _ in _kernels()})


@functools.cache
def ort_minimum_opset() -> int | None:
    """The oldest ai.onnx opset ONNX Runtime guarantees to run, as it says itself when it loads an older model
    (a one-node opset-1 model, loaded once per process); None if it says nothing recognisable."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe", [x], [y])
    probe = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 1)], ir_version=3)
    log: list[tuple[int, str, str]] = []
    with capture_ort_log(log, 2), contextlib.suppress(Exception):  # it warns while loading, before anything fails
        ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    found = [int(m.group(1)) for _, _, text in log if (m := _GUARANTEE.search(text))]
    return found[0] if found else None


def standard_opset(model: onnx.ModelProto) -> int | None:
    """The model's ai.onnx opset; None when it imports none."""
    versions = [o.version for o in model.opset_import if o.domain in _STANDARD]
    return versions[0] if versions else None


def onnx_release(opset: int) -> str:
    """The onnx release that introduced ai.onnx opset ``opset`` ("" when onnx's table does not say)."""
    from onnx import helper

    return next((row[0] for row in helper.VERSION_TABLE if row[2] == opset), "")


def _since_version(op: str, opset: int, domain: str) -> tuple[int, bool] | None:
    """The version of ``op`` a model at ``opset`` uses, and whether onnx defines it as a function (which ONNX
    Runtime expands into other ops instead of needing a kernel); None when onnx does not know it."""
    import onnx

    try:
        schema = onnx.defs.get_schema(op, opset, domain)
    except onnx.defs.SchemaError:
        return None
    # onnx's type stubs leave these two out
    function = getattr(schema, "has_function", False) or getattr(schema, "has_context_dependent_function", False)
    return schema.since_version, bool(function)


def missing_kernels(model: onnx.ModelProto) -> list[MissingKernel]:
    """The standard operators (ai.onnx, ai.onnx.ml) of ``model``, at its opsets, that ONNX Runtime has no kernel
    for: what an old model lacks. Ops of other domains (custom, training) are not counted here."""
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    local = {(f.domain, f.name) for f in model.functions}
    used: Counter[tuple[str, str]] = Counter()
    for visit in walk_graphs(model):
        for node in visit.graph.node:
            domain = "" if node.domain == "ai.onnx" else node.domain
            kernel_free = domain == "" and node.op_type == "Constant"  # ORT holds its value as a weight
            if domain in ("", "ai.onnx.ml") and (node.domain, node.op_type) not in local and not kernel_free:
                used[(domain, node.op_type)] += 1
    kernels = _kernels()
    missing = []
    for (domain, op), count in sorted(used.items()):
        known = _since_version(op, opsets.get(domain, 1), domain)
        if known is None or known[1]:
            continue
        ranges = kernels.get((domain, op), [])
        if not any(low <= known[0] <= high for low, high in ranges):
            first = min((low for low, _ in ranges), default=None)
            missing.append(MissingKernel(op=op, domain=domain, version=known[0], nodes=count, first=first))
    return missing


def old_opset_refusal(model: onnx.ModelProto) -> OldOpsetError | None:
    """The words for a model whose ai.onnx operators are older than any ONNX Runtime runs (a newer version of
    each has a kernel); None when that is not what keeps it from running."""
    import onnxruntime as ort

    opset = standard_opset(model)
    lacking = [m for m in missing_kernels(model) if m.domain == "" and m.first is not None and m.first > m.version]
    if opset is None or not lacking:
        return None
    release = onnx_release(opset)
    minimum = ort_minimum_opset()
    runs = f"it runs opset {minimum} and later" if minimum else "it has kernels only for newer versions of them"
    shown = ", ".join(m.text for m in lacking[:8]) + (f" and {len(lacking) - 8} more" if len(lacking) > 8 else "")
    return OldOpsetError(
        f"This model is written in opset {opset} of the standard ONNX operators (ai.onnx"
        + (f", as onnx {release} defined them" if release else "")
        + f"), older than ONNX Runtime {ort.__version__} runs: {runs}. It has no kernel for the versions of "
        f"these operators the model uses: {shown}. Upgrade the model to a newer opset with onnx's version "
        f"converter: 'Upgrade and continue' on the page, or `python -m core upgrade MODEL --opset "
        f"{DEFAULT_UPGRADE_OPSET} -o OUT` (a new version of the model, checked against the original)."
    )


def _training_or_custom(model: onnx.ModelProto, domain: str, op: str) -> RuntimeRefusedError:
    nodes = Counter(n.op_type for v in walk_graphs(model) for n in v.graph.node if n.domain == domain)
    counted = [
        ngettext("{op} ({count} node)", "{op} ({count} nodes)", n).format(op=name, count=n)
        for name, n in nodes.most_common()
    ]
    ops = brief(", ".join(counted) or op, 200)
    has = ", ".join(kernel_domains())
    if domain == TRAINING_DOMAIN:
        return RuntimeRefusedError(
            _(
                "This model holds training operators of ONNX's preview domain {domain}: {ops}. They compute "
                "gradients and weight updates while a model is trained, and this ONNX Runtime has no kernel for any "
                "op of that domain (it has kernels for {has}). Keep the inference part of the model: "
                "onnx.utils.extract_model(path, new_path, input_names, output_names) with the outputs you need, "
                "leaving out the ones the training ops compute."
            ).format(domain=domain, ops=ops, has=has)
        )
    return RuntimeRefusedError(
        _(
            "This model uses operators of the domain '{domain}': {ops}, which this ONNX Runtime has no kernel for "
            "(it has kernels for {has}). Ops of another domain are custom ops: they run only where their library is "
            "registered with ONNX Runtime (SessionOptions.register_custom_ops_library), which this app does not do. "
            "Export the model without them, or run it where that library is."
        ).format(domain=brief(domain, 80), ops=ops, has=has)
    )


def _machine_locales() -> list[str]:
    """The locales this machine has (``locale -a``); empty when that cannot be asked."""
    program = shutil.which("locale")
    if program is None:
        return []
    try:
        done = subprocess.run([program, "-a"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in done.stdout.splitlines() if line.strip()][:40]


def _locale(model: onnx.ModelProto, wanted: str) -> RuntimeRefusedError:
    names = []
    for visit in walk_graphs(model):
        for node in visit.graph.node:
            if node.op_type == "StringNormalizer":
                attrs = {a.name: a.s.decode(errors="replace") for a in node.attribute if a.name == "locale"}
                if attrs.get("locale", wanted) == wanted:
                    names.append(f"'{brief(node.name, 60)}'" if node.name else "")
    named = [n for n in names if n]
    which = "StringNormalizer node" + ("s" if len(names) > 1 else "") + (f" {', '.join(named[:5])}" if named else "")
    has = _machine_locales()
    listed = f"it has {', '.join(has)}" if has else "its locales could not be listed"
    verb = "changes" if len(names) <= 1 else "change"
    return RuntimeRefusedError(
        f"The model's {which} {verb} the case of strings in the locale {brief(wanted, 60)} (its locale attribute, "
        f"or ONNX Runtime's default when it sets none), and this machine does not have that locale: {listed}. "
        "ONNX Runtime takes locales from the system. Install it where the model runs (Debian and Ubuntu: the "
        f"locales package, then enable {brief(wanted, 60)} in /etc/locale.gen and run locale-gen), or set the "
        "node's locale attribute to one the machine has."
    )


def explain_refusal(exc: BaseException | str, model: onnx.ModelProto | None, what: str) -> WorkbenchError:
    """ONNX Runtime's refusal to ``what`` (e.g. "create a session for this model") for ``model`` (its graph, as
    loaded without external data), in the user's terms when it is one we recognise; else its own words after
    ours."""
    text = ort_message(exc)
    if model is not None:
        if _NO_KERNEL.search(text):
            old = old_opset_refusal(model)
            if old is not None:
                return old
        found = _NOT_REGISTERED.search(text)
        if found and found.group(1) not in _STANDARD:
            return _training_or_custom(model, found.group(1), found.group(2))
        locale = _LOCALE.search(text)
        if locale:
            return _locale(model, locale.group(1))
    return PartitionError(f"ONNX Runtime could not {what}: {text}")
