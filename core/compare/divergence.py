"""Where the error comes from: the first node whose output leaves the tolerance while its inputs are within it
(the node that brings the error in, not the ones that carry it on), the path to it, and why it is likely."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.compare.measures import Graph
from core.compare.records import Divergence, NodeError, TensorError
from core.i18n import N_
from core.notes import Note, note

if TYPE_CHECKING:
    import onnx

__all__ = [
    "FP16_MAX",
    "INT4_OPS",
    "first_divergence",
    "int4_blocks",
    "introducing",
    "model_kind",
    "node_errors",
    "taint",
]

FP16_MAX = 65504.0
_INT8_OPS = {
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "QLinearConv",
    "QLinearMatMul", "QGemm", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QAttention",
}  # fmt: skip
# int4 weight-only: a MatMul's weights (MatMulNBits) or an embedding table (GatherBlockQuantized) stored as 4-bit
# integers in blocks, each block with its scale (ONNX Runtime's com.microsoft ops; onnxruntime-genai's int4 models)
INT4_OPS = {"MatMulNBits", "GatherBlockQuantized"}
CAUSES = {
    "weight": N_("a changed weight"),
    "op": N_("a different op in the second model"),
    "fp16-range": N_("float16's range"),
    "fp16-rounding": N_("float16's rounding"),
    "quantized": N_("INT8 quantization"),
    "int4": N_("int4 weight-only quantization"),
    "fused": N_("a fused op"),
    "rounding": N_("rounding"),
    "past": N_("the past each model built from the same tokens"),
}


def node_errors(graph: Graph, measured: dict[str, TensorError], b_ops: dict[str, str]) -> list[NodeError]:
    """Every node of the reference with a compared output, by its worst output, in graph order."""
    rows = []
    for index, outputs in enumerate(graph.outputs):
        found = [measured[t] for t in outputs if t in measured]
        if not found:
            continue
        worst = max(found, key=lambda e: (not e.within, e.relative))
        b_op = b_ops.get(worst.name, "")
        rows.append(
            NodeError(
                node=graph.names[index], op_type=graph.ops[index], module=graph.modules[index], index=index,
                outputs=[e.name for e in found], max_abs=worst.max_abs, mean_abs=worst.mean_abs,
                relative=worst.relative, cosine=min(e.cosine for e in found), within=all(e.within for e in found),
                b_op_type=b_op if b_op != graph.ops[index] else "",
            )
        )  # fmt: skip
    return rows


def taint(graph: Graph, measured: dict[str, TensorError]) -> list[bool]:
    """For each node, whether error reaches it through its inputs: a compared input out of tolerance, or an input
    that was not compared and is written by a node error reaches (passed on through what was fused away)."""
    carries: dict[str, bool] = {}
    reached = []
    for index, inputs in enumerate(graph.inputs):
        inbound = any(carries.get(t, False) for t in inputs)
        reached.append(inbound)
        for tensor in graph.outputs[index]:
            carries[tensor] = not measured[tensor].within if tensor in measured else inbound
    return reached


def introducing(graph: Graph, measured: dict[str, TensorError], reached: list[bool]) -> list[int]:
    """The nodes that bring error in: out of tolerance, none reaching them through their inputs."""
    return [
        index
        for index, outputs in enumerate(graph.outputs)
        if not reached[index] and any(t in measured and not measured[t].within for t in outputs)
    ]


def _path(graph: Graph, index: int, limit: int = 40) -> list[str]:
    """The nodes from an input of the model to node ``index``, following each node's first computed input; a
    weight a Constant node holds is not followed (a Paddle export's path read "Constant_136 → Conv@0")."""
    path = [index]
    while len(path) < limit:
        feeding = [graph.producer[t] for t in graph.inputs[path[-1]] if t in graph.producer]
        computed = [i for i in feeding if graph.ops[i] != "Constant" and graph.inputs[i]]
        if not computed:
            break
        path.append(computed[0])
    return [graph.names[i] for i in reversed(path)]


def model_kind(model: onnx.ModelProto) -> str:
    """ "fp16" for a float16 variant, "int8" for a quantized one, "int4" for an int4 weight-only one (its MatMuls
    as MatMulNBits, its embedding as GatherBlockQuantized), else ""."""
    if any(n.op_type in _INT8_OPS for n in model.graph.node):
        return "int8"
    if any(n.op_type in INT4_OPS for n in model.graph.node):
        return "int4"
    if any(t.data_type == 10 for t in model.graph.initializer) or any(
        n.op_type == "Cast" and any(a.name == "to" and a.i == 10 for a in n.attribute) for n in model.graph.node
    ):
        return "fp16"
    return ""


def int4_blocks(model: onnx.ModelProto) -> dict[str, tuple[str, int, int, int]]:
    """Each output of an int4 node (MatMulNBits, GatherBlockQuantized): its op, bits, block size and accuracy level
    (0 where the attribute is left out: the kernel's default)."""
    found = {}
    for node in model.graph.node:
        if node.op_type in INT4_OPS:
            given = {a.name: a.i for a in node.attribute}
            said = (node.op_type, given.get("bits", 4), given.get("block_size", 0), given.get("accuracy_level", 0))
            found.update(dict.fromkeys(node.output, said))
    return found


def first_divergence(
    graph: Graph,
    measured: dict[str, TensorError],
    reached: list[bool],
    context: dict[str, Any],
) -> Divergence | None:
    """The first node that brings error in, with its inputs' and outputs' errors and the likely causes.
    ``context``: ``b_ops`` (tensor -> b's op for it, before optimization), ``b_fused`` (tensor -> the op that
    computes it in b's optimized graph), ``b_types`` (tensor -> b's dtype), ``weights`` (a function giving the
    names of the node's weights that differ, with how much), ``kind`` (b's model_kind), ``b_int4`` (b's int4_blocks,
    optional)."""
    nodes = introducing(graph, measured, reached)
    if not nodes:
        return None
    index = nodes[0]
    outputs = [measured[t] for t in graph.outputs[index] if t in measured]
    inputs = [measured[t] for t in graph.inputs[index] if t in measured]
    uncompared = [
        t for t in graph.inputs[index]
        if t not in measured and t in graph.producer and graph.ops[graph.producer[t]] != "Constant"  # a weight
    ]  # fmt: skip
    cause, why = _why(graph, index, outputs, context)
    return Divergence(
        node=graph.names[index], op_type=graph.ops[index], module=graph.modules[index], index=index, inputs=inputs,
        outputs=outputs, why=why, cause=cause, path=_path(graph, index), uncompared_inputs=uncompared,
    )  # fmt: skip


# the likely causes a divergence is said with (core.notes: said where shown)
FP16_WEIGHT_RANGE = N_(
    "Its weight '{name}' reaches {largest}, beyond float16's largest number (65,504): in the float16 model it is "
    "infinite."
)
FP16_WEIGHT_ROUNDED = N_("Its weight '{name}' is rounded to float16 (by up to {diff}).")
WEIGHT_DIFFERS = N_("Its weight '{name}' differs between the two models (by up to {diff}).")
OTHER_OP = N_("The second model computes it with {b_op} where the first has {op}.")
FP16_VALUES_RANGE = N_(
    "Its values reach {largest} in the first model, beyond float16's largest number (65,504): in float16 they become "
    "infinite ({count} values)."
)
INT8_ROUNDED = N_("The second model is quantized: its inputs or weights are rounded to 8-bit integers here.")
INT4_NODE = N_(
    "The second model computes it with {b_op}: its weights are rounded to {bits}-bit integers, in blocks of {block} "
    "values with a scale each (accuracy level {level})."
)
INT4_MODEL = N_(
    "The second model is int4 weight-only (MatMulNBits): its MatMuls' weights are rounded to 4-bit integers in "
    "blocks, and the rounding adds up along the graph."
)
FP16_ROUNDED = N_(
    "The second model computes it in float16, which keeps about three significant digits: every value is rounded "
    "there, and the rounding adds up along the graph."
)
FUSED_OP = N_("ONNX Runtime computes it with {fused} in the second model: a fused op, whose arithmetic differs.")
ONLY_ROUNDING = N_(
    "Nothing changed in the node itself: its arithmetic rounds differently (another kernel, another order of "
    "summation). If the error is small, a looser tolerance may be right."
)


def _int4(tensor: str, context: dict[str, Any]) -> tuple[str, Note] | None:
    """The int4 cause: the node's own blocks when b computes it with an int4 op, else the model's."""
    if context["kind"] != "int4":
        return None
    blocks = context.get("b_int4", {}).get(tensor)
    if blocks is None:
        return "int4", note(INT4_MODEL)
    op, bits, block, level = blocks
    return "int4", note(INT4_NODE, b_op=op, bits=bits, block=block, level=level)


def _why(graph: Graph, index: int, outputs: list[TensorError], context: dict[str, Any]) -> tuple[str, list[Note | str]]:
    """The likely causes, most likely first, as (the first one's key, notes)."""
    found: list[tuple[str, Note]] = []
    op = graph.ops[index]
    for name, diff, largest in context["weights"](index):
        if context["kind"] == "fp16" and largest > FP16_MAX:
            found.insert(0, ("fp16-range", note(FP16_WEIGHT_RANGE, name=name, largest=float(largest))))
        elif context["kind"] == "fp16":
            found.append(("fp16-rounding", note(FP16_WEIGHT_ROUNDED, name=name, diff=float(diff))))
        else:
            found.append(("weight", note(WEIGHT_DIFFERS, name=name, diff=float(diff))))
    worst = max(outputs, key=lambda e: e.relative)
    b_op = context["b_ops"].get(worst.name, "")
    if b_op and b_op != op:
        found.append(("op", note(OTHER_OP, b_op=b_op, op=op)))
    half = context["b_types"].get(worst.name) == "float16" or context["kind"] == "fp16"
    if half and worst.nonfinite:
        found.insert(
            0, ("fp16-range", note(FP16_VALUES_RANGE, largest=float(worst.reference_max), count=worst.nonfinite))
        )
    if context["kind"] == "int8":  # the cause; its other ops (ConvInteger, the Mul by the scale) follow from it
        found.insert(0, ("quantized", note(INT8_ROUNDED)))
    if (int4 := _int4(worst.name, context)) is not None:  # the cause; MatMulNBits for MatMul follows from it
        found.insert(0, int4)
    if context["kind"] == "fp16" and not any(key.startswith("fp16") for key, _s in found):
        found.append(("fp16-rounding", note(FP16_ROUNDED)))
    fused = context["b_fused"].get(worst.name, "")
    if fused and fused not in (op, b_op):
        found.append(("fused", note(FUSED_OP, fused=fused)))
    if not found:
        found.append(("rounding", note(ONLY_ROUNDING)))
    return found[0][0], [said for _key, said in found]
