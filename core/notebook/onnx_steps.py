"""The ONNX cells: opening an uploaded model, decoding the protobuf (node count, op histogram), and which execution
provider runs each node, read from ONNX Runtime's own record of its assignment (as the Partition page reads it)."""

from __future__ import annotations

from pathlib import Path

from core.i18n import _
from core.model.records import ModelRecord
from core.notebook.cells import Cell, code, literal, markdown

__all__ = ["decode_cells", "onnx_model_cells", "partition_cells"]


def onnx_model_cells(record: ModelRecord) -> list[Cell]:
    """The Model page for an ONNX upload: the file beside the notebook, its inputs and outputs."""
    return [
        markdown(
            _(
                "Your model is an ONNX file: a computation graph of operators with its weights. Put "
                "the file beside this notebook (the .zip of the whole walk-through holds it); any external data "
                "files go beside it too."
            )
        ),
        code(
            f"MODEL_PATH = {literal(Path(record.path).name)}",
            "onnx_model = onnx.load(MODEL_PATH, load_external_data=False)",
            "print('IR version', onnx_model.ir_version, '| producer', repr(onnx_model.producer_name))",
            "print('opsets', {o.domain or 'ai.onnx': o.version for o in onnx_model.opset_import})",
            "for tensor in onnx_model.graph.input:",
            "    dims = [d.dim_value or d.dim_param or '?' for d in tensor.type.tensor_type.shape.dim]",
            "    print('input ', repr(tensor.name), dims)",
            "for tensor in onnx_model.graph.output:",
            "    dims = [d.dim_value or d.dim_param or '?' for d in tensor.type.tensor_type.shape.dim]",
            "    print('output', repr(tensor.name), dims)",
        ),
    ]


def decode_cells() -> list[Cell]:
    """The Decode page: the first bytes of the protobuf, then the graph it describes."""
    return [
        markdown(
            _(
                "An .onnx file is one protobuf message, ModelProto. Each field starts with a tag byte: the field's "
                "number shifted left by three, plus its wire type. The first byte is usually 0x08: field 1 "
                "(ir_version) as a varint."
            )
        ),
        code(
            "with open(MODEL_PATH, 'rb') as f:",
            "    head = f.read(24)",
            "print(head.hex(' '))",
            "print('first field:', head[0] >> 3, '| wire type:', head[0] & 7)",
        ),
        markdown(
            _(
                "onnx.load parses the whole message. The graph's nodes are its operators, in the order they "
                "run; initializers are the weights. The op histogram shows what the model is made of."
            )
        ),
        code(
            "from collections import Counter",
            "",
            "onnx_model = onnx.load(MODEL_PATH, load_external_data=False)",
            "graph = onnx_model.graph",
            "op_counts = dict(Counter(node.op_type for node in graph.node).most_common())",
            "weights = sum(int(np.prod(t.dims)) for t in graph.initializer)",
            "print(len(graph.node), 'nodes,', len(graph.initializer), 'initializers,', weights, 'weights')",
            "for op, n in op_counts.items():",
            "    print(f'{op:<28}{n:>6}')",
            "RESULTS['node_count'] = len(graph.node)",
            "RESULTS['op_counts'] = op_counts",
        ),
    ]


def partition_cells() -> list[Cell]:
    """The Partition page: ONNX Runtime's record of which provider took each node, counted by provider."""
    return [
        markdown(
            _(
                "ONNX Runtime hands each node of the graph to an execution provider in the order you "
                "list them; CPUExecutionProvider takes whatever the others cannot. Before that, graph optimization "
                "at ORT_ENABLE_ALL may fuse or remove nodes."
            ),
            _(
                "The session option session.record_ep_graph_assignment_info makes ONNX Runtime keep which provider "
                "took which node, by the node's original name. This is what the app's Partition page shows for "
                "this machine: the count of the model's nodes per provider, and the nodes that run nowhere "
                "(constants and nodes the optimizer removed)."
            ),
        ),
        code(
            "from collections import Counter, defaultdict, deque",
            "",
            "PROVIDERS = ['CPUExecutionProvider']",
            "options = ort.SessionOptions()",
            "options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL",
            "options.add_session_config_entry('session.record_ep_graph_assignment_info', '1')",
            "session = ort.InferenceSession(MODEL_PATH, options, providers=PROVIDERS)",
            "",
            "graph = onnx.load(MODEL_PATH, load_external_data=False).graph",
            "waiting = defaultdict(deque)  # ORT names nodes as the model does: match them in order, per name and op",
            "for index, node in enumerate(graph.node):",
            "    waiting[(node.name, node.op_type)].append(index)",
            "provider_of = {}",
            "for assigned in session.get_provider_graph_assignment_info():",
            "    for node in assigned.get_nodes():",
            "        queue = waiting.get((node.name, node.op_type))",
            "        if queue:",
            "            provider_of[queue.popleft()] = assigned.ep_name",
            "per_provider = dict(Counter(provider_of.values()).most_common())",
            "for provider, n in per_provider.items():",
            "    print(f'{provider:<28}{n:>6} nodes')",
            "print(len(graph.node) - len(provider_of), 'nodes run nowhere (constants, or removed by the optimizer)')",
            "RESULTS['partition'] = per_provider",
        ),
    ]
