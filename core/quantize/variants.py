"""The variants, made with ONNX Runtime's own tools: quantize_dynamic, quantize_static, convert_float_to_float16."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from core.errors import QuantizeError
from core.model.proto import iter_tensors, tensor_elements, tensor_nbytes
from core.quantize.calibration import CalibrationReader
from core.quantize.records import INTEGER_OPS, VARIANTS

__all__ = ["file_size", "make_variant", "refuse_unquantizable", "stage_source", "weight_bytes"]


def stage_source(source: Path, out: Path) -> Path:
    """The model seen from a folder of ``out`` through links (with its external-data files): ORT's quantizers
    write scratch files beside the model they read, and the model's own folder is read-only in the sandbox."""
    import onnx

    staged = out / "source"
    staged.mkdir(parents=True, exist_ok=True)
    model = onnx.load_model(str(source), load_external_data=False)
    locations = {e.value for _, t in iter_tensors(model) for e in t.external_data if e.key == "location"}
    for name in [source.name, *sorted(locations)]:
        link = staged / name
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to((source.parent / name).resolve())
    return staged / source.name


_FLOAT_TYPES = {1, 10, 11, 16}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16 (TensorProto data types)


def refuse_unquantizable(model: Any) -> None:
    quantized = sorted({n.op_type for n in model.graph.node if n.op_type in INTEGER_OPS})
    if quantized:
        raise QuantizeError(
            f"The model is already quantized: it has {', '.join(quantized)} nodes. Quantize the float model instead."
        )
    float_weights = [t for _, t in iter_tensors(model) if t.data_type in _FLOAT_TYPES and tensor_elements(t) > 1]
    if not float_weights:
        raise QuantizeError("The model has no float weights, so there is nothing to quantize or convert.")


def file_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*") if f.is_file())


def weight_bytes(path: Path) -> int:
    import onnx

    return sum(tensor_nbytes(t) for _, t in iter_tensors(onnx.load_model(str(path), load_external_data=False)))


def make_variant(
    key: str, source: Path, pre: Path | None, out: Path, calibration: list[dict[str, Any]], large: bool
) -> Path:
    """Write variant ``key`` of ``source`` into ``out`` (static variants start from the pre-processed ``pre``)."""
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_dynamic, quantize_static

    label, mode, options = VARIANTS[key]
    target = out / f"{source.stem}.{key}.onnx"
    if mode == "dynamic":
        weight = QuantType.QInt8 if options["weight_type"] == "qint8" else QuantType.QUInt8
        quantize_dynamic(str(source), str(target), weight_type=weight, use_external_data_format=large)
    elif mode == "static":
        assert pre is not None
        method = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
                  "percentile": CalibrationMethod.Percentile}[options["method"]]  # fmt: skip
        fmt = QuantFormat.QDQ if options["format"] == "qdq" else QuantFormat.QOperator
        quantize_static(
            str(pre), str(target), CalibrationReader(calibration), quant_format=fmt, calibrate_method=method,
            activation_type=QuantType.QUInt8 if fmt == QuantFormat.QOperator else QuantType.QInt8,
            weight_type=QuantType.QInt8, use_external_data_format=large,
        )  # fmt: skip
    else:
        from onnxruntime.transformers.float16 import convert_float_to_float16

        model = onnx.load_model(str(source))
        if not any(t.data_type == 1 for t in model.graph.initializer) and not any(
            n.op_type == "Constant" for n in model.graph.node
        ):
            raise QuantizeError("The model has no float32 weights to convert; it may already be in float16.")
        from onnxruntime.transformers.onnx_model import OnnxModel

        converted = OnnxModel(convert_float_to_float16(model, keep_io_types=options["keep_io_types"]))
        converted.topological_sort()  # the converter appends its input Casts at the end; the checker wants order
        onnx.save_model(converted.model, str(target), save_as_external_data=large)
    changed = _changed_ops(source, target)
    if mode != "fp16" and not changed:
        raise QuantizeError(
            f"{label}: no node was quantized. ONNX Runtime quantizes Conv, MatMul, Gemm, Attention and a few "
            "others; this model has none it could take."
        )
    return target


def _changed_ops(before: Path, after: Path) -> dict[str, int]:
    import onnx

    old = Counter(n.op_type for n in onnx.load_model(str(before), load_external_data=False).graph.node)
    new = Counter(n.op_type for n in onnx.load_model(str(after), load_external_data=False).graph.node)
    return {op: n for op, n in new.items() if op in INTEGER_OPS and n > old.get(op, 0)}
