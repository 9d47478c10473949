"""The PyTorch cells: building the user's model as the app built it (a sample's architecture written out, a
state_dict loaded into it, TorchScript, a .pt2 program, the model's own code and weights), and exporting it with
the same ``torch.onnx.export`` call the Export page made."""

from __future__ import annotations

import inspect
from pathlib import Path

from core.errors import NotebookError
from core.i18n import _
from core.model import zoo
from core.model.export_options import ExportOptions
from core.model.records import ModelRecord
from core.notebook.cells import Cell, code, literal, markdown

__all__ = ["EXPORTED_FILE", "export_cells", "torch_model_cells"]

EXPORTED_FILE = "model.onnx"  # what the export cell writes, beside the notebook

_UNWRAP = '''
def state_dict_of(checkpoint):
    """The weights of a checkpoint: itself, or its 'state_dict'/'model' entry, without DataParallel's prefix."""
    if isinstance(checkpoint, dict):
        for key in ("state_dict", "model_state_dict", "model", "net"):
            inner = checkpoint.get(key)
            if isinstance(inner, dict) and inner and all(torch.is_tensor(v) for v in inner.values()):
                checkpoint = inner
                break
    tensors = {str(k): v for k, v in checkpoint.items() if torch.is_tensor(v)}
    if tensors and all(k.startswith("module.") for k in tensors):
        tensors = {k.removeprefix("module."): v for k, v in tensors.items()}
    return tensors
'''


def _architecture(name: str) -> list[str]:
    """The sample's architecture as code, built as the app builds it (seeded, BatchNorm given statistics)."""
    zoo.get_sample(name)
    builder = zoo._BUILDERS[name]  # the zoo's own source, so the notebook's model is the app's
    source = inspect.getsource(builder)
    function = builder.__name__
    return [
        "from typing import Any",
        "",
        source.rstrip(),
        "",
        "",
        f"torch.manual_seed({zoo.SEED})",
        f"model = {function}(nn)",
        "# " + _("BatchNorm gets non-trivial statistics, as in the app, so folding it into Conv is a real change"),
        "for module in model.modules():",
        "    if isinstance(module, nn.BatchNorm2d):",
        "        with torch.no_grad():",
        "            module.running_mean.uniform_(-0.1, 0.1)",
        "            module.running_var.uniform_(0.5, 1.5)",
        "model = model.eval()",
    ]


def _weights(record: ModelRecord) -> list[str]:
    file = literal(Path(record.path).name)
    if record.format == "safetensors":
        return ["from safetensors.torch import load_file", f"model.load_state_dict(load_file({file}))"]
    return [_UNWRAP, f"model.load_state_dict(state_dict_of(torch.load({file}, weights_only=True, map_location='cpu')))"]


def _user_code(record: ModelRecord) -> list[str]:
    assert record.code is not None
    user = record.code
    if user.package:  # the package is the folder itself (a zip with __init__.py at its top)
        lines = [
            "import importlib, importlib.util, json, sys",
            f"package_dir = {literal(Path(user.root).name)}  # " + _("your package's folder, beside this notebook"),
            f"spec = importlib.util.spec_from_file_location({literal(user.package)}, package_dir + '/__init__.py',"
            " submodule_search_locations=[package_dir])",
            f"sys.modules[{literal(user.package)}] = importlib.util.module_from_spec(spec)",
            f"spec.loader.exec_module(sys.modules[{literal(user.package)}])",
        ]
    else:
        folder = "." if Path(user.root).suffix == ".py" else Path(user.root).name
        lines = [
            "import importlib, json, sys",
            f"sys.path.insert(0, {literal(folder)})  # " + _("your code lies beside this notebook"),
        ]
    lines += [
        f"model_class = getattr(importlib.import_module({literal(user.module)}), {literal(user.class_name)})",
        f"model = model_class(**json.loads({literal(user.args)}))",
        *_weights(record),
        "model = model.eval()",
    ]
    return lines


def _load_lines(record: ModelRecord) -> list[str]:
    """The lines that build the model as ``model`` (an nn.Module, or what a .pt2 program's module() gives)."""
    if record.format == "sample":
        return _architecture(record.name)
    if record.format in ("state_dict", "safetensors"):
        return [*_architecture(record.architecture), *_weights(record)]
    if record.format == "torchscript":
        return [f"model = torch.jit.load({literal(Path(record.path).name)}, map_location='cpu').eval()"]
    if record.format == "pt2":
        return [f"program = torch.export.load({literal(Path(record.path).name)})", "model = program.module()"]
    if record.format == "code" and record.code is not None:
        return _user_code(record)
    raise NotebookError(
        _("A notebook cannot rebuild a {format}; pick a PyTorch or an ONNX model.").format(
            format=_(record.format_label)
        )
    )


def torch_model_cells(record: ModelRecord) -> list[Cell]:
    """The Model page for a PyTorch model: build it, print it, count its parameters."""
    where = {
        "sample": _(
            "This is one of the app's samples. Its architecture is written out below exactly as the app builds "
            "it, with the same seed, so your numbers can be compared with the app's."
        ),
        "state_dict": _(
            "A state_dict holds weights only; the app matched its keys to one of its sample architectures, which "
            "is written out below. The weights file lies beside this notebook and loads with "
            "torch.load(weights_only=True), which runs no code."
        ),
        "torchscript": _(
            "A TorchScript archive holds its own code: torch.jit.load needs no Python class. Open only archives "
            "you trust."
        ),
        "pt2": _("A .pt2 file is a torch.export program: torch.export.load gives it back with its dynamic dims."),
        "code": _(
            "Your model is your own code with its weights: the class is imported from the code beside this "
            "notebook and built with the same arguments as in the app."
        ),
    }
    lesson = where.get("state_dict" if record.format == "safetensors" else record.format, "")
    return [
        markdown(
            _(
                "PyTorch runs a model eagerly: each layer is a Python call, one after another. Here the model is "
                "built in plain PyTorch, as the app built it."
            ),
            lesson,
        ),
        code("import torch", "from torch import nn", "", *_load_lines(record)),
        code(
            "parameter_count = sum(p.numel() for p in model.parameters()) if hasattr(model, 'parameters') else None",
            "print(model)",
            "print('parameters:', parameter_count)",
            "RESULTS['parameters'] = parameter_count",
        ),
    ]


def _traced_shapes(choice: ExportOptions) -> dict[str, list[int]]:
    """torch.export treats a dynamic axis of size 0 or 1 as a constant: the app traces such an axis at 2."""
    shapes = {k: list(v) for k, v in choice.input_shapes.items()}
    if choice.exporter == "dynamo":
        for name, dims in choice.dynamic_axes.items():
            for axis in dims:
                if name in shapes and shapes[name][int(axis)] < 2:
                    shapes[name][int(axis)] = 2
    return shapes


def _identifier(label: str, fallback: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in label.strip())
    return cleaned if cleaned and not cleaned[0].isdigit() and cleaned.isidentifier() else fallback


def _export_call(choice: ExportOptions) -> list[str]:
    names = list(choice.input_shapes)
    call = [
        "torch.onnx.export(",
        "    model,",
        "    example,",
        f"    {literal(EXPORTED_FILE)},",
        f"    dynamo={choice.exporter == 'dynamo'},",
        f"    opset_version={int(choice.opset)},",
        f"    input_names={literal(names)},",
    ]
    if choice.output_names:
        call.append(f"    output_names={literal(list(choice.output_names))},")
    if choice.exporter == "dynamo":
        shapes = tuple(
            {int(a): _identifier(lbl, f"d{a}") for a, lbl in choice.dynamic_axes.get(n, {}).items()} or None
            for n in names
        )
        call += [f"    dynamic_shapes={literal(shapes)},", f"    optimize={choice.optimize},"]
        call.append("    external_data=False,")
    else:
        axes = {n: {int(a): lbl for a, lbl in d.items()} for n, d in choice.dynamic_axes.items() if d}
        call += [f"    dynamic_axes={literal(axes)},", f"    do_constant_folding={choice.optimize},"]
    return [*call, ")"]


def export_cells(choice: ExportOptions) -> list[Cell]:
    """The Export page: the same call, then the checker, then PyTorch and ONNX Runtime side by side."""
    traced = _traced_shapes(choice)
    make = []
    for name, shape in traced.items():
        dtype = choice.input_dtypes.get(name, "float32")
        if dtype.startswith("float") or dtype not in ("int64", "int32", "bool"):
            make.append(f"    torch.randn({', '.join(map(str, shape))}),")
        elif dtype == "bool":
            make.append(f"    torch.ones({', '.join(map(str, shape))}, dtype=torch.bool),")
        else:
            make.append(f"    torch.randint(0, 10, ({', '.join(map(str, shape))},), dtype=torch.{dtype}),")
    lesson = _(
        "Exporting turns the PyTorch model into an ONNX computation graph: torch.onnx.export runs "
        "the model on an example input and records each operator it calls. The opset says which version of "
        "each operator the graph uses; dynamic axes say which dims may change when the model runs (a batch, a "
        "sequence length). These are the settings the app used: opset {opset}, the {exporter} exporter."
    ).format(opset=int(choice.opset), exporter="dynamo" if choice.exporter == "dynamo" else "legacy")
    note = _(
        "torch.export treats a dynamic axis of size 1 as a constant, so the example input has size 2 on such an "
        "axis; the model still runs at size 1."
    )
    return [
        markdown(lesson, note if traced != choice.input_shapes and choice.exporter == "dynamo" else ""),
        code("torch.manual_seed(0)", "example = (", *make, ")", "", *_export_call(choice)),
        markdown(
            _(
                "The checker validates the graph; then ONNX Runtime runs it on the same inputs as PyTorch, and the "
                "largest difference between their outputs should be tiny (float rounding, around 1e-6)."
            )
        ),
        code(
            f"MODEL_PATH = {literal(EXPORTED_FILE)}",
            "onnx.checker.check_model(onnx.load(MODEL_PATH))",
            "check = ort.InferenceSession(MODEL_PATH, providers=['CPUExecutionProvider'])",
            "ort_out = check.run(None, feeds)",
            "with torch.no_grad():",
            "    torch_out = eager(model)",
            "torch_out = torch_out if isinstance(torch_out, (tuple, list)) else (torch_out,)",
            "diff = max(float(np.max(np.abs(np.asarray(o) - t.detach().numpy()))) for o, t in zip(ort_out, torch_out))",
            "print('largest difference, ONNX Runtime against PyTorch:', diff)",
            "RESULTS['export_max_abs_diff'] = diff",
        ),
    ]
