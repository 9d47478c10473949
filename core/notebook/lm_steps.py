"""The cells of a causal language model from a Hugging Face folder: built by transformers offline from the folder's
files beside the notebook, wrapped so that it takes its past and gives its present as flat tensors (the model every
later cell runs), exported with its cache, and verified by generating greedily with both, token by token. The code is
core.model.causal_lm_code's, the same lines as the Export page's."""

from __future__ import annotations

from core.i18n import _
from core.model.causal_lm_code import NEW_TOKENS, PROMPTS, export_lines, greedy_lines, load_lines
from core.model.export_options import ExportOptions
from core.notebook.cells import Cell, code, literal, markdown

__all__ = ["lm_export_cells", "lm_model_cells"]


def lm_model_cells() -> list[Cell]:
    """The Model page for a Hugging Face folder: its config and weights beside the notebook, loaded offline."""
    return [
        markdown(
            _(
                "Your model is a Hugging Face folder: a config.json, its weights and its tokenizer, which lie beside "
                "this notebook. transformers builds the causal language model from them without fetching anything "
                "and without running any code of the folder (trust_remote_code stays off). The wrapper below takes "
                "each layer's past keys and values as tensors and gives them back with the new tokens': that is the "
                "model the app exports and runs, one call at a time."
            )
        ),
        code(*load_lines(".")),
        code(
            "parameter_count = sum(p.numel() for p in hf_model.parameters())",
            "print(config.model_type, LAYERS, 'layers,', KV_HEADS, 'key/value heads of', HEAD_SIZE)",
            "print('parameters:', parameter_count)",
            "RESULTS['parameters'] = parameter_count",
        ),
    ]


def lm_export_cells(choice: ExportOptions, output: str) -> list[Cell]:
    """The Export page for a language model: the same call, then generation by both, token by token."""
    return [
        markdown(
            _(
                "A language model is exported with its cache: the inputs past_key_values.N.key/value take what the "
                "earlier tokens computed, and the outputs present.N.key/value give it back with the new tokens'. "
                "The batch, the new tokens, the past and the mask (past + new) stay dynamic, so one file serves the "
                "prompt (an empty past) and every token after it. These are the settings the app used: opset "
                "{opset}, the {exporter} exporter."
            ).format(opset=int(choice.opset), exporter="dynamo" if choice.exporter == "dynamo" else "legacy")
        ),
        code(*export_lines(choice.exporter, choice.opset, output, choice.optimize)),
        markdown(
            _(
                "One call proves little for a language model: what its users see are the tokens. PyTorch (with its "
                "own cache) and ONNX Runtime (its present fed back as the next past) generate greedily from the same "
                "prompts; the tokens should be the same, step by step."
            )
        ),
        code(
            *greedy_lines(output, PROMPTS, NEW_TOKENS), "", f"MODEL_PATH = {literal(output)}  # the next steps run it"
        ),
    ]
