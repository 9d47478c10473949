"""A comparison on the page: the first divergence and why, the path to it, the outputs, the nodes by error, the
graph coloured by error, and what could not be compared."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pandas as pd
import streamlit as st

from core.compare import CompareReport, Divergence, StepPlan, StepReport, TensorError, TopToken
from core.compare.divergence import CAUSES
from core.compare.engine import ONLY_OUTPUTS
from core.compare.records import EXACT_NODES
from core.errors import WorkbenchError
from core.graph import GraphView
from core.graph.colourings import error_colouring
from core.i18n import _, ngettext, number, pgettext
from core.jobs.wire import to_data
from core.model.generative import PROMPT_LENGTH
from core.model.records import ModelRecord
from core.notes import Note, say, significant
from core.quantize import Variant
from core.quantize.judge import Tolerance
from ui import session
from ui.downloads import Download, csv_of, side_by_side
from ui.graph_panel import draw_graph
from ui.text import md_escape

__all__ = [
    "compare_section",
    "fix_verdict",
    "layers_frame",
    "nodes_frame",
    "step_fields",
    "step_section",
    "tensors_frame",
    "top_frame",
]

SHOWN_NODES = 200  # rows of the node table (the download has them all)
_KINDS = {"fp16": "FP16", "int8": "INT8", "int4": "INT4"}  # a variant's kind (core.compare.divergence.model_kind)


def _figure(value: float) -> str:
    return "∞" if math.isinf(value) else significant(value, 3)


def tensors_frame(tensors: list[TensorError]) -> pd.DataFrame:
    """Tensors with their errors, as the page's tables show them (a grid shows text as text: nothing to escape)."""
    return pd.DataFrame(
        {
            _("tensor"): [t.name for t in tensors],
            _("shape"): [str(t.shape) for t in tensors],
            _("max abs error"): [_figure(t.max_abs) for t in tensors],
            _("mean abs error"): [_figure(t.mean_abs) for t in tensors],
            _("relative error"): [_figure(t.relative) for t in tensors],
            _("cosine"): [f"{t.cosine:.6f}" for t in tensors],
            _("within"): [_("yes") if t.within else _("no") for t in tensors],
        }
    )


def nodes_frame(report: CompareReport) -> pd.DataFrame:
    """Every compared node that differs at all, worst first (one that agrees exactly is no lead)."""
    nodes = report.ranked_nodes
    return pd.DataFrame(
        {
            _("node"): [n.node for n in nodes],
            _("op type"): [n.op_type + (f" → {n.b_op_type}" if n.b_op_type else "") for n in nodes],
            _("module"): [n.module for n in nodes],
            _("max abs error"): [_figure(n.max_abs) for n in nodes],
            _("relative error"): [_figure(n.relative) for n in nodes],
            _("cosine"): [f"{n.cosine:.6f}" for n in nodes],
            _("within"): [_("yes") if n.within else _("no") for n in nodes],
        }
    )


def _metrics(report: CompareReport) -> None:
    cols = st.columns(4)
    cols[0].metric(_("Tensors compared"), number(report.matched))
    within = sum(o.within for o in report.outputs)
    cols[1].metric(_("Outputs within"), f"{number(within)} / {number(len(report.outputs))}")
    found = report.first_divergence
    cols[2].metric(_("First divergence"), found.op_type if found else _("none"))
    cols[3].metric(_("Time"), _("{seconds} s").format(seconds=f"{report.seconds:.1f}"))
    st.caption(
        _(
            "A: {a} at {a_level}. B: {b} at {b_level}. Within the tolerance: {tolerance}. Each model ran {groups} "
            "time(s), a group of tensors each time, the largest group {mb} MiB: memory stays bounded, whatever "
            "the model's size."
        ).format(
            a=md_escape(report.a, 120), a_level=report.a_level, b=md_escape(report.b, 120), b_level=report.b_level,
            tolerance=md_escape(say(report.tolerance)), groups=report.groups, mb=f"{report.peak_group_mb:.1f}",
        )
    )  # fmt: skip
    if report.b_kind and within < len(report.outputs):  # a variant Quantize may well have judged within its gate
        st.caption(
            _(
                "Quantize judges a variant by its outputs as a whole: their cosine with float32's (at least "
                "{cosine}), their mean error and the top-1 agreement; here the outputs' cosine is {seen}. This "
                "page's tolerance bounds every value, and a {kind} variant rounds every value: it shows where the "
                "variant departs most, not whether it passes. Raise the relative tolerance (0.01 for float16) to "
                "see only the largest departures."
            ).format(
                cosine=f"{Tolerance().min_cosine:g}",
                seen=f"{min(o.cosine for o in report.outputs):.6f}",
                kind=_KINDS.get(report.b_kind, report.b_kind.upper()),
            )
        )


def _divergence(found: Divergence) -> None:
    module = _(" in module “{module}”").format(module=md_escape(found.module, 200)) if found.module else ""
    st.error(
        _("**The first divergence**: {op} node **{node}**{module}, likely {cause}.").format(
            op=md_escape(found.op_type, 60), node=md_escape(found.node, 200), module=module,
            cause=_(CAUSES.get(found.cause, found.cause)),
        )
    )  # fmt: skip
    for why in found.why:
        st.markdown("- " + md_escape(say(why), 600))
    if found.uncompared_inputs:
        st.caption(
            _(
                "Some of its inputs were fused away at the level compared ({inputs}): the error may come from the "
                "nodes fused into them."
            ).format(inputs=md_escape(pgettext("list", ", ").join(found.uncompared_inputs), 400))
        )
    st.markdown(_("**Its inputs and outputs**"))
    st.dataframe(tensors_frame([*found.inputs, *found.outputs]), hide_index=True, width="stretch")
    st.markdown(_("**The path from the model's input to it**"))
    st.caption(md_escape(" → ".join(found.path), 4000))


def _advice(report: CompareReport) -> None:
    if not report.keep_float32:
        return
    nodes = md_escape(pgettext("list", ", ").join(report.keep_float32), 1000)
    if report.b_kind == "fp16":
        st.info(
            _("**What to do**: keep these nodes in float32 when converting to float16: {nodes}.").format(nodes=nodes)
        )
    elif report.b_kind == "int4":
        st.info(
            _(
                "**What to do**: leave these MatMuls in float when quantizing to int4 (MatMulNBitsQuantizer's "
                "nodes_to_exclude), or quantize them with smaller blocks (16 or 32 values a scale); an accuracy level "
                "of 4 (int8 activations) also rounds their inputs, where level 1 computes in float32: {nodes}."
            ).format(nodes=nodes)
        )
    else:
        st.info(_("**What to do**: exclude these nodes from quantization: {nodes}.").format(nodes=nodes))


def compare_section(report: CompareReport, key: str, view: GraphView | None = None) -> None:
    """One comparison, in the reader's language."""
    _metrics(report)
    if report.proves_nothing:  # a warning in the verdict's place, never a green one
        st.warning(_(report.proves_nothing))
    elif report.first_divergence is None and not report.nodes:
        st.info(_(ONLY_OUTPUTS))
    elif report.first_divergence is None:
        st.success(_("No node leaves the tolerance: the two models agree on every tensor compared."))
    else:
        _divergence(report.first_divergence)
    _advice(report)
    st.markdown(_("**The outputs**"))
    st.dataframe(tensors_frame(report.outputs), hide_index=True, width="stretch")
    frame = nodes_frame(report)
    st.markdown(
        _("**The nodes by error**, worst first ({shown} of {count}).").format(
            shown=number(min(len(frame), SHOWN_NODES)), count=number(len(frame))
        )
    )
    st.dataframe(frame.head(SHOWN_NODES), hide_index=True, width="stretch")
    if report.exact_nodes:
        st.caption(_(EXACT_NODES).format(count=number(report.exact_nodes)))
    for lost in report.uncompared:
        examples = md_escape(pgettext("list", ", ").join(lost.examples), 500)
        st.caption(
            ngettext(
                "{count} tensor not compared: {reason} (e.g. {examples}).",
                "{count} tensors not compared: {reason} (e.g. {examples}).",
                lost.count,
            ).format(count=number(lost.count), reason=_(lost.reason), examples=examples)
        )
    if view is not None:
        st.markdown(_("**The graph, coloured by error**: the first divergence in purple, the worst nodes darkest."))
        relative = {n.index: n.relative for n in report.nodes}
        first = report.first_divergence.index if report.first_divergence else None
        colouring = error_colouring(view, relative, first)
        marked = next((n.name for n in view.nodes if first is not None and n.index == first), "")
        if marked and not session.page_param("node"):  # the graph opens on the first divergence
            session.set_page_param("node", marked)
        draw_graph(view, key=f"{key}_graph", colourings={"error": colouring}, colour="error")
    side_by_side(
        Download(label=_("Download the nodes (CSV)"), data=csv_of(frame), file_name="compare-nodes.csv",
                 mime="text/csv", key=f"{key}_csv"),
        Download(label=_("Download the comparison (JSON)"), data=lambda: json.dumps(to_data(report), indent=2),
                 file_name="compare.json", key=f"{key}_json"),
    )  # fmt: skip


def fix_verdict(variant: Variant, tolerance: Note | str) -> None:
    """The variant made again with Compare's nodes left out, judged by Quantize's tolerance gate."""
    if variant.error:
        st.error(md_escape(variant.error, 800))
    elif variant.accuracy_ok:
        st.success(
            _("{variant}, made again: within Quantize's tolerance ({tolerance}). The Quantize page lists it.").format(
                variant=variant.label, tolerance=md_escape(say(tolerance), 400)
            )
        )
    else:
        st.warning(
            _("{variant}, made again: still out of Quantize's tolerance ({why}). Compare it again for the next node.")
            .format(variant=variant.label, why=md_escape(say(variant.accuracy_note), 400))
        )  # fmt: skip


def step_fields(record: ModelRecord, tokenizer: bool) -> Callable[[], StepPlan | None]:
    """Inside Compare's form, for a language model: the prompt and the step (``tokenizer``: a text prompt can be
    given). Returns what makes the step's plan once the form is sent (None: compared one call at a time)."""
    if record.generative is None:
        return lambda: None
    asked = st.checkbox(
        _("A language model: compare both at a step of a prompt"), value=True, key="compare_at_step",
        help=_(
            "Both models are driven by the same tokens: A chooses greedily from the prompt up to the step, B is fed "
            "A's choices, and each is fed at the step the past (keys and values) it built itself from them, in its "
            "own dtype. So the step itself is compared, not the drift of the steps before it."
        ),
    )  # fmt: skip
    left, mid, right = st.columns(3)
    step = left.number_input(
        _("Step"), 0, 4096, 1, key="compare_step", help=_("0: the prefill (the whole prompt at once); k: the k-th "
        "decode step, after the k tokens before it"),
    )  # fmt: skip
    ids = mid.text_input(_("The prompt's token ids (e.g. 1,2,3)"), key="compare_prompt_ids")
    length = right.number_input(
        _("Else a prompt of this many drawn ids"), 1, 4096, PROMPT_LENGTH, key="compare_prompt_len"
    )
    text = st.text_input(_("Or the prompt as text"), key="compare_prompt_text") if tokenizer else ""

    def plan() -> StepPlan | None:
        if not asked:
            return None
        try:
            given = [int(v) for v in ids.replace(",", " ").split()]
        except ValueError:
            raise WorkbenchError(_("The prompt's ids must be whole numbers separated by commas, e.g. 1,2,3.")) from None
        return StepPlan(
            step=int(step), prompt_ids=given, prompt_text="" if given else text.strip(), prompt_length=int(length)
        )

    return plan


def top_frame(step: StepReport) -> pd.DataFrame:
    """Each model's likeliest tokens at the step, side by side (a grid shows text as text: nothing to escape)."""

    def column(top: list[TopToken], what: Callable[[TopToken], str]) -> list[str]:
        return [what(t) for t in top]

    frame = {
        _("rank"): list(range(1, len(step.top5_a) + 1)),
        _("A's token"): column(step.top5_a, lambda t: str(t.id)),
        _("A's logit"): column(step.top5_a, lambda t: significant(t.logit, 4)),
        _("B's token"): column(step.top5_b, lambda t: str(t.id)),
        _("B's logit"): column(step.top5_b, lambda t: significant(t.logit, 4)),
    }
    if any(t.text for t in step.top5_a):
        frame[_("A's text")] = column(step.top5_a, lambda t: t.text)
        frame[_("B's text")] = column(step.top5_b, lambda t: t.text)
    return pd.DataFrame(frame)


def layers_frame(step: StepReport) -> pd.DataFrame:
    """The first model's layers, each by its worst compared node."""
    return pd.DataFrame(
        {
            _("layer"): [la.name for la in step.layers],
            _("nodes compared"): [la.nodes for la in step.layers],
            _("max abs error"): [_figure(la.max_abs) for la in step.layers],
            _("relative error"): [_figure(la.relative) for la in step.layers],
            _("within"): [_("yes") if la.within else _("no") for la in step.layers],
            _("first node out"): [la.first_out for la in step.layers],
        }
    )


def step_section(step: StepReport) -> None:
    """Two language models at a step of a prompt: the tokens that led there, both choices, the layers."""
    where = _("the prefill") if step.step == 0 else _("decode step {step}").format(step=step.step)
    st.markdown(_("**At {where} of the prompt**").format(where=where))
    said = f" “{md_escape(step.prompt_text, 300)}”" if step.prompt_text else ""
    tokens = md_escape(str(step.tokens), 400) + (f" “{md_escape(step.tokens_text, 300)}”" if step.tokens_text else "")
    st.caption(
        _(
            "The prompt: {count} ids{text}; A's greedy tokens before the step: {tokens}. Each model was fed at the "
            "step the past it built itself from these tokens ({length} positions; A's in {a}, B's in {b}): the step "
            "is compared, not the drift of the steps before it."
        ).format(
            count=number(len(step.prompt_ids)), text=said, tokens=tokens,
            length=number(step.past_length), a=step.kv_dtype_a, b=step.kv_dtype_b,
        )
    )  # fmt: skip
    if step.same_greedy:
        st.success(_("Both models choose token {id} at this step.").format(id=step.greedy_a))
    else:
        st.warning(_("The models choose differently here: A token {a}, B token {b}.").format(
            a=step.greedy_a, b=step.greedy_b
        ))  # fmt: skip
    st.dataframe(top_frame(step), hide_index=True, width="stretch")
    if step.layers:
        st.markdown(_("**Layer by layer**"))
        if step.divergence_layer:
            st.caption(_("The models part in {layer}.").format(layer=md_escape(step.divergence_layer, 200)))
        st.dataframe(layers_frame(step), hide_index=True, width="stretch")
    parted = [p for p in step.past if not p.within]
    if parted:
        st.markdown(_("**The pasts each model built**, out of the tolerance: the models parted before this step."))
        st.dataframe(tensors_frame(parted), hide_index=True, width="stretch")
