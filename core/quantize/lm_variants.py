"""A language model's variants, made with ONNX Runtime's own tools from the model in memory: int4 weight-only
(MatMulNBitsQuantizer), dynamic INT8 (quantize_dynamic) and FP16 (its float16 converter, inputs and outputs kept in
float32 so the cache is fed as before). Nothing is written beside the model: its folder is read-only in the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import QuantizeError
from core.i18n import _
from core.quantize.lm_records import LMVariantSpec
from core.quantize.records import INTEGER_OPS, NO_FLOAT32

if TYPE_CHECKING:
    import onnx

__all__ = ["MAKERS", "make_dynamic", "make_fp16", "make_int4", "model_with_weights"]


def model_with_weights(source: Path) -> onnx.ModelProto:
    """The model with its external data read in, each location checked first to name a regular file in the model's
    folder, reached without links, the bytes inside it (core.model.onnx_file). onnx's own loader is not used: it
    refuses a data file that has a second hard link, and the app links an upload into its workspace rather than
    copy it."""
    import onnx

    from core.model.onnx_file import read_external_data

    return read_external_data(onnx.load_model(str(source), load_external_data=False), source.parent)


def _save(model: onnx.ModelProto, target: Path, large: bool) -> None:
    import onnx

    onnx.save_model(model, str(target), save_as_external_data=large, location=f"{target.name}.data")


def make_int4(model: onnx.ModelProto, target: Path, spec: LMVariantSpec, large: bool) -> None:
    """Int4 weight-only: every MatMul with constant weights becomes MatMulNBits (symmetric blocks, as
    onnxruntime-genai's builder makes them), through ONNX Runtime's MatMulNBitsQuantizer."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(
        model,
        bits=4,
        block_size=spec.block_size,
        is_symmetric=True,
        accuracy_level=spec.accuracy_level or None,  # 0: the attribute left out, the kernel's default
    )
    quantizer.process()
    if not any(n.op_type == "MatMulNBits" for n in quantizer.model.model.graph.node):
        raise QuantizeError(
            _("{variant}: no MatMul with constant weights was found, so nothing was quantized.").format(
                variant=spec.label()
            )
        )
    quantizer.model.topological_sort()
    _save(quantizer.model.model, target, large)


def make_dynamic(model: onnx.ModelProto, target: Path, spec: LMVariantSpec, large: bool) -> None:
    """Dynamic INT8 (QInt8 weights) with ONNX Runtime's quantize_dynamic, given the model itself (given its path, the
    quantizer writes its shape-inferred copy beside it)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(model, str(target), weight_type=QuantType.QInt8, use_external_data_format=large)
    if not any(n.op_type in INTEGER_OPS for n in onnx.load_model(str(target), load_external_data=False).graph.node):
        raise QuantizeError(
            _("{variant}: no MatMul with constant weights was found, so nothing was quantized.").format(
                variant=spec.label()
            )
        )


def make_fp16(model: onnx.ModelProto, target: Path, spec: LMVariantSpec, large: bool) -> None:
    """FP16 with ONNX Runtime's converter and its list of ops without a float16 kernel; the inputs and outputs stay
    float32 (the cache too), cast at the edges."""
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16
    from onnxruntime.transformers.onnx_model import OnnxModel

    if not any(t.data_type == 1 for t in model.graph.initializer):
        raise QuantizeError(_(NO_FLOAT32))
    converted = OnnxModel(
        convert_float_to_float16(
            model, keep_io_types=True, op_block_list=DEFAULT_OP_BLOCK_LIST, disable_shape_infer=large
        )  # shape inference takes a model under 2 GB only
    )
    converted.topological_sort()  # the converter appends its input Casts at the end; the checker wants order
    _save(converted.model, target, large)


# a kind of core.quantize.lm_records.LM_KINDS -> what makes it: (the model with its weights, the file to write, the
# variant asked for, whether to write its weights as external data)
MAKERS: dict[str, Callable[[onnx.ModelProto, Path, LMVariantSpec, bool], None]] = {
    "int4": make_int4,
    "dynamic": make_dynamic,
    "fp16": make_fp16,
}
