"""Hostile and broken inputs, built by the tests. Each case is files to upload and what must happen to them.

A case either must be refused at the door (``refused``: words the error must contain) or may be accepted and
then must not break any page (``pages``: the walk-through pages to open on it, and words one of them must show).
"""

from __future__ import annotations

import io
import os
import pickle
import random
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests import builders

OPSET = [helper.make_opsetid("", 17)]


@dataclass
class Case:
    name: str
    build: Callable[[Path], list[Path]]  # writes the files into a folder, returns the ones to upload
    refused: str = ""  # words the refusal must contain ("" when the model is accepted)
    pages: list[str] = field(default_factory=list)  # pages that must work on an accepted model
    expect: dict[str, str] = field(default_factory=dict)  # page -> words it must show (a clear message)
    cli_only: bool = False  # a browser upload cannot carry it (a symlink): checked through the command line


def _model(nodes: list, inputs: list, outputs: list, inits: list | None = None, **kw: object) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    model = helper.make_model(graph, opset_imports=kw.pop("opsets", OPSET), **kw)  # type: ignore[arg-type]
    model.ir_version = int(kw.get("ir_version", 8))  # type: ignore[call-overload]
    return model


def _vi(name: str, dims: list | None = None, dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, dims if dims is not None else [1, 4])


def _save(model: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> list[Path]:
    return [builders.write(model, folder / name)]


def _matmul(w: np.ndarray) -> onnx.ModelProto:
    return _model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [_vi("x", [1, w.shape[0]])],
        [_vi("y", [1, w.shape[1]])],
        [numpy_helper.from_array(w, "w")],
    )


# -- the bytes themselves ----------------------------------------------------------------------------------------
def zero_bytes(folder: Path) -> list[Path]:
    path = folder / "empty.onnx"
    path.write_bytes(b"")
    return [path]


def random_bytes(folder: Path) -> list[Path]:
    path = folder / "random.onnx"
    path.write_bytes(random.Random(0).randbytes(4096))
    return [path]


def truncated(folder: Path) -> list[Path]:
    whole = builders.chain_model(50).SerializeToString()
    path = folder / "truncated.onnx"
    path.write_bytes(whole[: len(whole) // 2])
    return [path]


# -- external data that reaches out ---------------------------------------------------------------------------
def _external(folder: Path, location: str, offset: int = 0, length: int | None = None) -> list[Path]:
    main = builders.save_with_external_data(builders.chain_model(10), folder)
    model = onnx.load(str(main), load_external_data=False)
    builders.set_external_location(model, location, offset, length)
    onnx.save(model, str(main))
    return [main, main.with_name("model.onnx.data")]


def external_dotdot(folder: Path) -> list[Path]:
    return _external(folder, "../../secret.txt")


def external_nested_dotdot(folder: Path) -> list[Path]:
    return _external(folder, "a/../../secret.txt")


def external_absolute(folder: Path) -> list[Path]:
    return _external(folder, str(folder.parent / "secret.txt"))


def external_symlink(folder: Path) -> list[Path]:
    files = _external(folder, "model.onnx.data")
    files[1].unlink()
    os.symlink(folder.parent / "secret.txt", files[1])
    return files


def external_negative_offset(folder: Path) -> list[Path]:
    return _external(folder, "model.onnx.data", offset=-64)


def external_huge_offset(folder: Path) -> list[Path]:
    return _external(folder, "model.onnx.data", offset=1 << 40)


def external_huge_length(folder: Path) -> list[Path]:
    return _external(folder, "model.onnx.data", length=1 << 40)


# -- a graph that lies ------------------------------------------------------------------------------------------
def dims_promise_more(folder: Path) -> list[Path]:
    """An initializer whose dims say 1e12 floats while its raw_data holds 16 bytes."""
    model = _matmul(np.ones((4, 4), np.float32))
    del model.graph.initializer[0].dims[:]
    model.graph.initializer[0].dims.extend([1_000_000, 1_000_000])
    return _save(model, folder)


def many_nodes(folder: Path, count: int = 100_001) -> list[Path]:
    """One node more than the graph view draws (ui/graph_panel.py) and than hosted mode accepts."""
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(count)]
    model = _model(nodes, [_vi("t0")], [_vi(f"t{count}")])
    return _save(model, folder, "wide.onnx")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _number(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def nested_ifs(folder: Path, depth: int = 60) -> list[Path]:
    """If inside If, ``depth`` levels: written field by field, since the protobuf library itself cannot build
    (or read) messages nested this deep."""
    out = _vi("y", [1]).SerializeToString()
    leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "leaf", [], [_vi("y", [1])])
    leaf_bytes = leaf.SerializeToString()
    graph = leaf_bytes
    for level in range(depth):
        then = _field(1, b"then_branch") + _number(20, 5) + _field(6, graph)  # AttributeProto, type GRAPH
        other = _field(1, b"else_branch") + _number(20, 5) + _field(6, leaf_bytes)
        node = _field(1, b"c") + _field(2, b"y") + _field(3, f"if{level}".encode()) + _field(4, b"If")
        graph = _field(1, node + _field(5, then) + _field(5, other)) + _field(2, f"b{level}".encode())
        graph += _field(12, out)
    graph += _field(11, _vi("c", [], TensorProto.BOOL).SerializeToString()) + _field(
        11, _vi("x", [1]).SerializeToString()
    )
    model = _number(1, 8) + _field(8, _field(1, b"") + _number(2, 17)) + _field(7, graph)
    path = folder / "nested.onnx"
    path.write_bytes(model)
    return [path]


def cycle(folder: Path) -> list[Path]:
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="first"),
        helper.make_node("Relu", ["a"], ["b"], name="second"),
    ]
    return _save(_model(nodes, [_vi("x")], [_vi("a")]), folder, "cycle.onnx")


def unknown_domain(folder: Path) -> list[Path]:
    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example.secret", name="custom")
    model = _model([node], [_vi("x")], [_vi("y")], opsets=[*OPSET, helper.make_opsetid("com.example.secret", 1)])
    return _save(model, folder, "custom_op.onnx")


def version_999(folder: Path) -> list[Path]:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y")])
    model.ir_version = 999
    model.opset_import[0].version = 999
    return _save(model, folder, "future.onnx")


def odd_dims(folder: Path) -> list[Path]:
    """Zero, negative and 10 kB symbolic dims."""
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["D" * 10_000, 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [0, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [-3, 4])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"), helper.make_node("Relu", ["z"], ["z2"])]
    model = _model(nodes, [x, z], [y, helper.make_tensor_value_info("z2", TensorProto.FLOAT, [0, 4])], [w])
    return _save(model, folder, "odd_dims.onnx")


def terabyte_expand(folder: Path) -> list[Path]:
    """Expand a [1] tensor to 10^12 elements: 4 TB if anything ever ran it."""
    shape = numpy_helper.from_array(np.array([1_000_000, 1_000_000], np.int64), "shape")
    nodes = [helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")]
    model = _model(nodes, [_vi("x", [1])], [_vi("y", [1_000_000, 1_000_000])], [shape])
    return _save(model, folder, "expand.onnx")


def nan_inf_weights(folder: Path) -> list[Path]:
    w = np.array([[np.nan, np.inf, -np.inf, 1.0]] * 4, np.float32)
    return _save(_matmul(w), folder, "nan_inf.onnx")


SCRIPT = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"


def script_names(folder: Path) -> list[Path]:
    """Markup in every string a model holds, and a 1 MB doc string and metadata value."""
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), SCRIPT + "w")
    x = _vi(SCRIPT + "x")
    y = _vi("y" + SCRIPT)
    node = helper.make_node("MatMul", [x.name, w.name], [y.name], name=SCRIPT + "node", doc_string=SCRIPT)
    model = _model([node], [x], [y], [w])
    model.doc_string = SCRIPT + "A" * 1_000_000
    model.producer_name = SCRIPT
    model.graph.name = SCRIPT
    helper.set_model_props(model, {SCRIPT: "B" * 1_000_000, "author": SCRIPT})
    return _save(model, folder, "script.onnx")


# -- pickles and archives ------------------------------------------------------------------------------------------
class _Exploit:
    def __init__(self, canary: Path) -> None:
        self.canary = canary

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.canary}",))


def pickle_exploit(suffix: str) -> Callable[[Path], list[Path]]:
    def build(folder: Path) -> list[Path]:
        path = folder / f"weights{suffix}"
        path.write_bytes(pickle.dumps({"weight": _Exploit(folder.parent / "canary")}))
        return [path]

    build.__name__ = f"pickle_exploit_{suffix.strip('.')}"
    return build


def zip_exploit_pt(folder: Path) -> list[Path]:
    """The same payload in the zip layout torch.save writes."""
    path = folder / "model.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("model/data.pkl", pickle.dumps(_Exploit(folder.parent / "canary")))
        archive.writestr("model/version", "3\n")
    return [path]


def zip_bomb(folder: Path) -> list[Path]:
    path = folder / "bomb.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model/data.pkl", pickle.dumps({}))
        archive.writestr("model/data/0", b"\0" * (300 << 20))  # 300 MB of zeros, ~300 kB compressed
    return [path]


def pickled_module(folder: Path) -> list[Path]:
    import torch

    path = folder / "whole_model.pt"
    torch.save(torch.nn.Linear(4, 2), path)
    return [path]


def _model_bytes_zip(folder: Path) -> list[Path]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../../evil.onnx", builders.relu_model().SerializeToString())
    path = folder / "slip.zip"
    path.write_bytes(buffer.getvalue())
    return [path]


# -- what a hostile tester found past the first suite ------------------------------------------------------------
def zip_of_megabyte_members(folder: Path) -> list[Path]:
    """Many members of exactly 1 MiB of zeros each: no single member looks like a bomb, the archive does."""
    path = folder / "many.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model.onnx", builders.relu_model().SerializeToString())
        for i in range(40):
            archive.writestr(f"pad/{i:04d}.bin", bytes(1 << 20))
    return [path]


def zip_claims_many_entries(folder: Path) -> list[Path]:
    """An archive whose end-of-central-directory record claims 65,535 entries."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("model.onnx", builders.relu_model().SerializeToString())
    data = bytearray(buffer.getvalue())
    at = data.rfind(b"PK\x05\x06")
    data[at + 8 : at + 12] = (0xFFFF).to_bytes(2, "little") * 2
    path = folder / "claims.zip"
    path.write_bytes(bytes(data))
    return [path]


def _bundle_with(folder: Path, name: str, extra: dict[str, bytes]) -> list[Path]:
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("model/model.onnx", builders.relu_model().SerializeToString())
        for member, payload in extra.items():
            archive.writestr(member, payload)
    return [path]


def zip_member_dot(folder: Path) -> list[Path]:
    return _bundle_with(folder, "dot.zip", {".": b"x"})


def zip_member_long(folder: Path) -> list[Path]:
    return _bundle_with(folder, "long.zip", {"model/" + "n" * 300: b"x"})


def zip_member_clash(folder: Path) -> list[Path]:
    return _bundle_with(folder, "clash.zip", {"model/weights": b"x", "model/weights/w.bin": b"y"})


def safetensors_huge_header(folder: Path) -> list[Path]:
    """A safetensors file whose header (the JSON list of tensors) is 17 MB."""
    header = b"{" + b" " * ((17 << 20) - 2) + b"}"
    path = folder / "weights.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    return [path]


def function_bomb(folder: Path, depth: int = 8, calls: int = 10) -> list[Path]:
    """Local functions that each call the next ``calls`` times: one node as written, 10⁸ inlined."""
    functions = []
    for level in range(depth):
        if level == 0:
            body = [helper.make_node("Relu", ["a"], ["b"])]
        else:
            names = ["a"] + [f"t{i}" for i in range(calls - 1)] + ["b"]
            body = [helper.make_node(f"F{level - 1}", [names[i]], [names[i + 1]], domain="bomb") for i in range(calls)]
        functions.append(
            helper.make_function("bomb", f"F{level}", ["a"], ["b"], body, [*OPSET, helper.make_opsetid("bomb", 1)])
        )
    call = helper.make_node(f"F{depth - 1}", ["x"], ["y"], domain="bomb", name="call")
    model = _model([call], [_vi("x")], [_vi("y")], functions=functions, opsets=[*OPSET, helper.make_opsetid("bomb", 1)])
    return _save(model, folder)


def external_nul(folder: Path) -> list[Path]:
    return _external(folder, "data\x00.bin")


def external_long_name(folder: Path) -> list[Path]:
    return _external(folder, "d" * 5000)


def sparse_indices_outside(folder: Path) -> list[Path]:
    """A sparse initializer whose *indices* are external data at an absolute path."""
    values = numpy_helper.from_array(np.ones(2, np.float32), "w")
    indices = numpy_helper.from_array(np.array([0, 3], np.int64), "w_indices")
    indices.ClearField("raw_data")
    indices.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "/etc/passwd"), ("offset", "0"), ("length", "16")):
        entry = indices.external_data.add()
        entry.key, entry.value = key, value
    sparse = helper.make_sparse_tensor(values, indices, [4])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="id")], "g", [_vi("x")], [_vi("y")])
    graph.sparse_initializer.append(sparse)
    model = helper.make_model(graph, opset_imports=OPSET)
    model.ir_version = 8
    return _save(model, folder)


def non_utf8_name(folder: Path) -> list[Path]:
    data = builders.relu_model().SerializeToString().replace(b"relu", b"r\xff\xfeu")
    path = folder / "bad_text.onnx"
    path.write_bytes(data)
    return [path]


def long_if_name(folder: Path, name_length: int = 1_000_000, branch_nodes: int = 1_400) -> list[Path]:
    """An If named with a million characters over a 1,400-node branch: about 1 MB on disk, and every node of the
    branch sits at a graph path that starts with the name."""
    chain = [
        helper.make_node("Relu", ["x" if i == 0 else f"r{i - 1}"], [f"r{i}"], name=f"r{i}") for i in range(branch_nodes)
    ]
    then = helper.make_graph(chain, "then", [], [_vi(f"r{branch_nodes - 1}")])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["n"], name="neg")], "else", [], [_vi("n")])
    node = helper.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=other, name="i" * name_length)
    model = _model([node], [_vi("flag", [], TensorProto.BOOL), _vi("x")], [_vi("y")])
    return _save(model, folder)


CASES = [
    Case("zero_bytes", zero_bytes, refused="is empty"),
    Case("random_bytes", random_bytes, refused="not a model format"),
    Case("truncated_onnx", truncated, refused="truncated"),
    Case("external_dotdot", external_dotdot, refused="outside"),
    Case("external_nested_dotdot", external_nested_dotdot, refused="outside"),
    Case("external_absolute", external_absolute, refused="absolute"),
    Case("external_symlink", external_symlink, refused="link", cli_only=True),
    Case("external_negative_offset", external_negative_offset, refused="negative offset"),
    Case("external_huge_offset", external_huge_offset, refused="but that file has only"),
    Case("external_huge_length", external_huge_length, refused="but that file has only"),
    Case("dims_promise_more", dims_promise_more, refused="promise"),
    Case("nested_ifs", nested_ifs, refused="nested"),
    Case("many_nodes", many_nodes, pages=["decode", "partition"]),
    Case("cycle", cycle, pages=["decode", "partition"], expect={"partition": "cycle"}),
    Case("unknown_domain", unknown_domain, pages=["decode", "partition"], expect={"partition": "Frobnicate"}),
    Case("version_999", version_999, pages=["decode", "partition"], expect={"partition": "999"}),
    Case("odd_dims", odd_dims, pages=["decode", "partition"]),
    Case("terabyte_expand", terabyte_expand, pages=["decode", "benchmark"], expect={"benchmark": "memory"}),
    Case("nan_inf_weights", nan_inf_weights, pages=["decode", "partition", "benchmark"]),
    Case("script_names", script_names, pages=["decode", "partition"]),
    Case("pickle_exploit_pt", pickle_exploit(".pt"), refused="posix.system"),
    Case("pickle_exploit_pth", pickle_exploit(".pth"), refused="posix.system"),
    Case("pickle_exploit_onnx", pickle_exploit(".onnx"), refused="posix.system"),
    Case("zip_exploit_pt", zip_exploit_pt, refused="posix.system"),
    Case("zip_bomb_pt", zip_bomb, refused="bomb"),
    Case("pickled_module", pickled_module, refused="whole"),
    Case("zip_slip", _model_bytes_zip, refused="outside"),
    Case("zip_of_megabyte_members", zip_of_megabyte_members, refused="zip bomb"),
    Case("zip_claims_many_entries", zip_claims_many_entries, refused="65,535 files"),
    Case("zip_member_dot", zip_member_dot, refused="no folder can hold"),
    Case("zip_member_long", zip_member_long, refused="no folder can hold"),
    Case("zip_member_clash", zip_member_clash, refused="both as a file and as a folder"),
    Case("safetensors_huge_header", safetensors_huge_header, refused="safetensors header of 17 MB"),
    Case("function_bomb", function_bomb, refused="inline them into 10,000,000 nodes"),
    Case("external_nul", external_nul, refused="control characters"),
    Case("external_long_name", external_long_name, refused="5,000 characters"),
    Case("sparse_indices_outside", sparse_indices_outside, refused="absolute path"),
    Case("non_utf8_name", non_utf8_name, refused="not UTF-8"),
    Case("long_if_name", long_if_name, pages=["decode", "partition"]),
]
