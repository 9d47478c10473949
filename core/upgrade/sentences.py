"""What an upgrade's report says: each sentence a catalog entry, kept in the report (and in the note of the new
version's record) as a note, its template and values (core.notes), said in the reader's language where shown."""

from __future__ import annotations

from core.i18n import N_

__all__ = [
    "ALONG_AXIS",
    "ADDED_BY_CONVERTER",
    "ATTRIBUTES_ADDED",
    "ATTRIBUTES_DROPPED",
    "ATTRIBUTES_DROPPED_WHY",
    "ATTRIBUTE_ADDED",
    "ATTRIBUTE_DROPPED",
    "ATTRIBUTE_DROPPED_WHY",
    "BROADCAST_ALONG_AXIS",
    "MATCHES",
    "OUTPUTS_BEYOND",
    "OUTPUTS_DIFF",
    "INPUTS_ADDED",
    "INPUTS_REMOVED",
    "IN_ORT",
    "IN_REFERENCE",
    "MISREAD_COUNT",
    "MISREAD_ONE",
    "NO_KERNEL",
    "OPENS_AND_RUNS",
    "OUT_OF_TIME",
    "PRELU_SLOPE",
    "PRELU_SLOPES",
    "REFERENCE_FAILED",
    "REFERENCE_MISREADS",
    "REFERENCE_RAN",
    "REMOVED",
    "REPLACED_BY",
    "RUNS_IN_ORT",
    "RUNS_NOWHERE",
    "SUMMARY",
    "SUMMARY_FAILED",
    "SUMMARY_UNCOMPARED",
    "SUMMARY_UNCOMPARED_FAILED",
    "UPGRADED_FROM",
    "TOO_LARGE",
    "VALID",
    "VERSION",
    "WHY_DROPPED",
]

# why an attribute was dropped on the way, by its name
WHY_DROPPED = {
    "broadcast": N_("broadcasting became implicit, numpy-style, in opset 7"),
    "axis": N_("broadcasting became implicit, numpy-style, in opset 7"),
    "is_test": N_("dropped in opset 7: an ONNX graph runs for inference"),
    "consumed_inputs": N_("dropped in opset 6 (it marked inputs updated in place)"),
    "spatial": N_("dropped in opset 9: BatchNormalization is always per channel"),
    "pads": N_("now an input (Pad-11)"),
    "value": N_("now an input (Pad-11)"),
}
# what changed in a node (core.upgrade.changes; joined by "; ")
ATTRIBUTE_DROPPED, ATTRIBUTES_DROPPED = N_("attribute {names} dropped"), N_("attributes {names} dropped")
ATTRIBUTE_DROPPED_WHY = N_("attribute {names} dropped ({why})")
ATTRIBUTES_DROPPED_WHY = N_("attributes {names} dropped ({why})")
ATTRIBUTE_ADDED, ATTRIBUTES_ADDED = N_("attribute {names} added"), N_("attributes {names} added")
INPUTS_ADDED, INPUTS_REMOVED = N_("{count} input(s) added"), N_("{count} input(s) removed")
REMOVED = N_("removed: the new version computes its result another way")
REPLACED_BY = N_("{old} replaced by {new}")
VERSION = N_("version {old} → {new}")
ADDED_BY_CONVERTER = N_("added by the converter")
BROADCAST_ALONG_AXIS = N_(
    "its second input broadcast along an axis (before opset 7): an Unsqueeze gives it the trailing 1-dims that "
    "numpy-style broadcasting needs to meet the same axes (onnx's converter adds as many as the first input has "
    "more dims, right only along axis 0)"
)
PRELU_SLOPE = N_(
    "its per-channel slope reshaped from [C] to [C, 1, …]: before opset 7 it met the channels (axis 1); from "
    "opset 7 a slope broadcasts from the last axis"
)
# the checks
VALID = N_("the new version is valid ONNX")  # the checks' other words: core.model.checks
RUNS_IN_ORT, OPENS_AND_RUNS = N_("runs in ONNX Runtime"), N_("the new version opens and runs on the plan")
MATCHES = N_("matches {what}")
OUTPUTS_DIFF = N_("{count} output(s), max abs diff {worst}")
OUTPUTS_BEYOND = N_("{count} output(s), max abs diff {worst}: beyond {atol} + {rtol}·|value|")
NO_KERNEL = N_("At opset {opset}, ONNX Runtime still has no kernel for: {ops}. Try another opset.")
# what ran the original, and the notes when nothing could
IN_ORT = N_("the original in ONNX Runtime")
IN_REFERENCE = N_("the original in onnx's reference evaluator (ONNX Runtime cannot run it)")
TOO_LARGE = N_(
    "The original runs nowhere here: ONNX Runtime refuses it ({refused}), and it is too large ({size} MB) for onnx's "
    "reference evaluator, which holds numpy copies of every weight and activation. So the new version was checked "
    "by onnx's checker and shape inference only, not against the original's outputs."
)
REFERENCE_MISREADS = N_(
    "The original runs nowhere here: ONNX Runtime refuses it ({refused}), and onnx's reference evaluator would run "
    "its {misread} by today's broadcasting rules, not the original's. So the new version was checked by onnx's "
    "checker and shape inference only, not against the original's outputs."
)
OUT_OF_TIME = N_("did not finish within its budget of {seconds} s (it is pure numpy: slow on large models)")
REFERENCE_FAILED = N_("could not run it either ({error})")
REFERENCE_RAN = N_(
    "ONNX Runtime cannot run the original, so onnx's reference evaluator (numpy, every opset) ran it, in {seconds} s."
)
RUNS_NOWHERE = N_(
    "The original runs nowhere here: ONNX Runtime refuses it ({refused}) and onnx's reference evaluator {why}. So "
    "the new version was checked by onnx's checker and shape inference only, not against the original's outputs."
)
PRELU_SLOPES = N_("PRelu with a per-channel slope")
ALONG_AXIS = N_("{op} broadcasting along an axis")
MISREAD_ONE, MISREAD_COUNT = N_("{what} ({count} node)"), N_("{what} ({count} nodes)")

# the report in a line (UpgradeReport.summary), and the note the new version's record keeps
SUMMARY = N_(
    "opset {before} → {after}: {changed} node(s) changed, {added} added, {unchanged} unchanged; checked against "
    "{compared}"
)
SUMMARY_FAILED = N_(
    "opset {before} → {after}: {changed} node(s) changed, {added} added, {unchanged} unchanged; did NOT pass its "
    "checks against {compared}"
)
SUMMARY_UNCOMPARED = N_(
    "opset {before} → {after}: {changed} node(s) changed, {added} added, {unchanged} unchanged; checked by onnx's "
    "checker and shape inference only (the original runs nowhere here)"
)
SUMMARY_UNCOMPARED_FAILED = N_(
    "opset {before} → {after}: {changed} node(s) changed, {added} added, {unchanged} unchanged; did NOT pass onnx's "
    "checker and shape inference, its only checks (the original runs nowhere here)"
)
UPGRADED_FROM = N_("Upgraded from {name} with onnx's version converter: {summary}.")
