"""The Python that redoes an export outside the app, and the shapes and dynamic dims the exporter is given."""

from __future__ import annotations

import re
from pathlib import Path

from core.export.options import ExportOptions, names_of_tensors
from core.model.formats import detect_format
from core.model.inputs import SCALAR_TYPES, scalar_value
from core.model.torchload import ExampleValues, TorchSource
from core.model.values import value_kind_of

__all__ = ["dynamic_shapes", "export_example_shapes", "identifier", "reproduce_code"]


# ----------------------------------------------------------------------------------------------- export
def identifier(label: str, fallback: str) -> str:
    cleaned = re.sub(r"\W", "_", label.strip())
    return cleaned if cleaned and not cleaned[0].isdigit() else fallback


def dynamic_shapes(options: ExportOptions) -> tuple[dict[int, str] | None, ...]:
    """torch.export's dynamic_shapes, one entry per input in order: axis -> a valid identifier, or None."""
    return tuple(
        {int(a): identifier(lbl, f"d{a}") for a, lbl in options.dynamic_axes.get(n, {}).items()} or None
        for n in names_of_tensors(options)
    )


def export_example_shapes(options: ExportOptions, exporter: str) -> dict[str, list[int]]:
    """The shapes the exporter sees. torch.export treats a size of 0 or 1 as a constant even on an axis
    marked dynamic, so for the dynamo exporter such an axis is traced at size 2; verification still runs at
    the shapes the user chose."""
    shapes = {k: list(v) for k, v in options.input_shapes.items()}
    if exporter == "dynamo":
        for name, dims in options.dynamic_axes.items():
            for axis in dims:
                if shapes[name][int(axis)] < 2:
                    shapes[name][int(axis)] = 2
    return shapes


def _integer_example(var: str, shape: list[int], dtype: str, made: ExampleValues | None) -> str:
    """The line that makes an integer or boolean example input as the export made it: a mask of ones, segment
    ids of zeros, token ids within the vocabulary (with the reason as a comment)."""
    dims = ", ".join(map(str, shape))
    written = value_kind_of(made.kind).torch_line if made is not None else None  # core.model.values
    if made is None or written is None:
        return f"{var} = torch.randint(0, 10, ({dims},), dtype=torch.{dtype})"
    line = written(var, dims, dtype, made)
    return f"{line}  # {made.why}" if made.why else line


_HERE = 'here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()'
_UNWRAP = (  # a checkpoint dict's state_dict, and DataParallel's "module." prefix off, as the app loaded it
    'for key in ("state_dict", "model_state_dict", "model", "net"):  # a checkpoint dict: the state_dict in it',
    "    if isinstance(state, dict) and isinstance(state.get(key), dict) and state[key]:",
    "        state = state[key]",
    "        break",
    'if all(k.startswith("module.") for k in state):  # saved from DataParallel',
    '    state = {k.removeprefix("module."): v for k, v in state.items()}',
)


def _user_code_lines(source: TorchSource) -> list[str]:
    """The lines that rebuild a model from its own code, anywhere with torch and the person's files beside the
    script (never this app's modules or the folder it kept them in): the class imported from the code, built with
    the same arguments, the weights loaded as the app loaded them."""
    code = source.code
    assert code is not None
    weights = Path(source.path).name
    lines = ["import json, sys", "from pathlib import Path", "", f"{_HERE}  # your code and weights lie here"]
    if code.package:  # the package is the folder itself (a zip with __init__.py at its top)
        lines += [
            "import importlib, importlib.util",
            f"folder = here / {code.package!r}  # your package: its zip unpacked into this folder beside the script",
            f'spec = importlib.util.spec_from_file_location({code.package!r}, folder / "__init__.py",'
            " submodule_search_locations=[str(folder)])",
            f"sys.modules[{code.package!r}] = importlib.util.module_from_spec(spec)",
            f"spec.loader.exec_module(sys.modules[{code.package!r}])",
            f"model_class = importlib.import_module({code.module!r}).{code.class_name}",
        ]
    else:
        where = Path(code.root).name  # model.py, or the zip's folder unzipped
        lines += [
            f"sys.path.insert(0, str(here))  # {where} beside this script",
            f"from {code.module} import {code.class_name} as model_class",
        ]
    lines.append(f"model = model_class(**json.loads({code.args!r}))")
    if detect_format(source.path) == "safetensors":
        lines += ["from safetensors.torch import load_file", f"model.load_state_dict(load_file(here / {weights!r}))"]
    else:
        lines += [f"state = torch.load(here / {weights!r}, weights_only=True)", *_UNWRAP]
        lines.append("model.load_state_dict(state)")
    return [*lines, "model.eval()"]


def _load_lines(source: TorchSource) -> list[str]:
    """The lines that build the PyTorch model, named ``model``."""
    if source.kind == "code":
        return _user_code_lines(source)
    if source.kind == "sample":
        return [
            "from core.model import zoo  # this project's sample zoo",
            f"model = zoo.build_model({source.name!r})",
        ]
    if source.kind == "state_dict":
        return [
            "from core.model import zoo  # this project's sample zoo",
            f"model = zoo.build_model({source.name!r})",
            f"model.load_state_dict(torch.load({Path(source.path).name!r}, weights_only=True))",
            "model.eval()",
        ]
    if source.kind == "safetensors":
        return [
            "from safetensors.torch import load_file",
            "from core.model import zoo  # this project's sample zoo",
            f"model = zoo.build_model({source.name!r})",
            f"model.load_state_dict(load_file({Path(source.path).name!r}))",
            "model.eval()",
        ]
    if source.kind == "torchscript":
        return [f"model = torch.jit.load({Path(source.path).name!r}).eval()"]
    return [f"model = torch.export.load({Path(source.path).name!r})"]


def reproduce_code(source: TorchSource, options: ExportOptions, exporter: str, output_path: str) -> str:
    """Python that redoes this exact export outside the app."""
    lines = ["import torch", ""]
    lines += _load_lines(source)
    lines.append("torch.manual_seed(0)")
    args = []
    traced = export_example_shapes(options, exporter)
    if traced != options.input_shapes:
        lines.append("# torch.export treats a dynamic axis of size 1 as a constant, so it is traced at size 2")
    for name, shape in traced.items():
        dtype = options.input_dtypes.get(name, "float32")
        var = identifier(name, "x")
        if dtype in SCALAR_TYPES:  # a Python scalar argument: traced as a constant
            value = scalar_value(dtype, options.input_values.get(name, 1.0))
            lines.append(f"{var} = {value!r}")
        elif dtype.startswith("float"):
            lines.append(f"{var} = torch.randn({', '.join(map(str, shape))}, dtype=torch.{dtype})")
        else:
            lines.append(_integer_example(var, shape, dtype, options.input_kinds.get(name)))
        args.append(var)
    call = [
        "    model,",
        f"    ({', '.join(args)},),",
        f"    {Path(output_path).name!r},",
        f"    dynamo={exporter == 'dynamo'},",
        f"    opset_version={options.opset},",
        f"    input_names={names_of_tensors(options)!r},",
    ]
    if options.output_names:
        call.append(f"    output_names={options.output_names!r},")
    if exporter == "dynamo":
        call.append(f"    dynamic_shapes={dynamic_shapes(options)!r},")
        call += [f"    optimize={options.optimize},", f"    external_data={options.external_data},"]
    else:
        dynamic = {n: {int(a): lbl for a, lbl in d.items()} for n, d in options.dynamic_axes.items() if d}
        call += [f"    dynamic_axes={dynamic!r},", f"    do_constant_folding={options.optimize},"]
    lines += ["", "torch.onnx.export(", *call, ")"]
    return "\n".join(lines) + "\n"
