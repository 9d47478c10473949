"""The notes a worker writes under a model's card: kept in the model's record as data (a template of this fixed set
and its values: the record is shared, another reader may read it in the other language) and said in the reader's
language where they are shown (core.notes.say; docs/i18n.md)."""

from __future__ import annotations

from core.i18n import N_
from core.notes import Note, note

__all__ = [
    "BUILT_FROM_CODE",
    "CHECKPOINT_ENTRY",
    "CODE_SHAPES",
    "CONSTANT_WEIGHTS",
    "DATAPARALLEL",
    "DEFAULT_INPUTS",
    "DOMAINS_IN_USE",
    "DOMAINS_UNUSED",
    "DOMAIN_UNUSED",
    "EXPORTED_FROM",
    "FIRST_LAYER",
    "FUNCTIONS",
    "LOADED_INTO",
    "PT2_EXPORTED",
    "PT2_NAMES",
    "SUBGRAPHS",
    "TEMPLATES",
    "TORCHSCRIPT_SHAPES",
    "Note",
    "note",
]

CHECKPOINT_ENTRY = N_("Weights taken from the checkpoint's '{key}' entry.")
DATAPARALLEL = N_("The 'module.' prefix of DataParallel was removed from every key.")
LOADED_INTO = N_("Loaded into the '{arch}' architecture: every key and shape matches.")
TORCHSCRIPT_SHAPES = N_(
    "TorchScript does not record input shapes or dtypes: you give the shapes when you export (float32 is assumed)."
)
PT2_EXPORTED = N_("Exported with torch {version} or compatible; its dynamic dims stay dynamic.")
PT2_NAMES = N_(
    "A saved torch.export program keeps no names for its dynamic dims, only torch's symbols; they are named here by "
    "where they sit ({named}). Rename them on the Export page: the ONNX model takes those names."
)
DOMAINS_IN_USE = N_("Operator domains beyond the standard ones: {domains}.")
DOMAIN_UNUSED = N_("Operator domain declared and unused: {domains} (no node uses it; nothing custom runs).")
DOMAINS_UNUSED = N_("Operator domains declared and unused: {domains} (no node uses them; nothing custom runs).")
SUBGRAPHS = N_("{subgraphs} subgraph(s) (If/Loop/Scan), {nodes} nodes in all.")
FUNCTIONS = N_("{count} local function(s).")
CONSTANT_WEIGHTS = N_("{count} weight tensor(s) are held in Constant nodes instead of initializers.")
DEFAULT_INPUTS = N_(
    "{count} input(s) hold a default in the model (an initializer of the same name): {names}. Every page leaves "
    "them at it and feeds none of them; a program that calls the model may pass other values."
)
BUILT_FROM_CODE = N_(
    "Built {name}(**{args}) from your code ({module}) and loaded the weights: every key and shape matches."
)
EXPORTED_FROM = N_("Exported from {kind} '{name}' by the {exporter} exporter.")
CODE_SHAPES = N_("Your code does not say its input shapes: give them on the Export page (float32 is assumed).")
FIRST_LAYER = N_(
    "Its first layer, {layer}, leaves axes {axes} of '{name}' free: the Export page offers them as dynamic (untick "
    "any the rest of the model fixes)."
)

TEMPLATES = (
    CHECKPOINT_ENTRY, DATAPARALLEL, LOADED_INTO, TORCHSCRIPT_SHAPES, PT2_EXPORTED, PT2_NAMES, DOMAINS_IN_USE,
    DOMAIN_UNUSED, DOMAINS_UNUSED, SUBGRAPHS, FUNCTIONS, CONSTANT_WEIGHTS, BUILT_FROM_CODE, CODE_SHAPES,
    EXPORTED_FROM, DEFAULT_INPUTS, FIRST_LAYER,
)  # fmt: skip
