"""Partition: which execution provider runs which node, and what the graph optimizer did at each level."""

from __future__ import annotations

import streamlit as st

from core.graph.colourings import Colouring, level_colouring, provider_colouring
from core.i18n import _, ngettext, number
from core.jobs import OPTIMIZE, PARTITION
from core.notes import say
from core.partition import SIMULATED, LevelsRequest, PartitionRequest
from core.runtime.ort import LEVELS
from ui import jobs, partition_view, runtime_view, session, targets
from ui.graph_panel import graph_of, start_graph
from ui.needs import next_steps, require_onnx
from ui.partition_view import (
    levels_section,
    providers_section,
    report_section,
    share_section,
)

st.title(_("Partition"))
st.markdown(
    _(
        "ONNX Runtime runs a graph through **execution providers** (EPs): back ends for a kind of hardware, such as "
        "the CPU, an NVIDIA GPU (CUDA, TensorRT), Intel's OpenVINO, or a phone's NPU (NNAPI, CoreML). Each EP says "
        "which nodes it can run; none has to run them all, and the CPU provider takes whatever is left."
    )
)
st.markdown(
    _(
        "**Partitioning** is greedy: ONNX Runtime asks the providers in your order of preference, and each takes "
        "the largest connected pieces (subgraphs) of the remaining graph that it supports. Every border between "
        "pieces on different devices costs a copy of the tensor crossing it, on every run, so a model split into "
        "many small pieces can be slower than one that stays on the CPU. Before partitioning, the **graph "
        "optimizer** rewrites the graph: constant folding and dead-node removal (BASIC), fusions of common patterns "
        "into one kernel (EXTENDED), and memory layouts that suit the hardware (LAYOUT); ALL is everything."
    )
)

record = require_onnx("partition")


runtime = runtime_view.runtime_picker("partition_runtime")  # shown when this server has more than one runtime
target_providers = targets.providers() if runtime == "default" else runtime_view.runtime_providers(runtime)
table = partition_view.providers_of(tuple(target_providers) if target_providers is not None else None)
available = [p.name for p in table if p.available]
known = ngettext(
    "The {count} execution provider ONNX Runtime knows; {available} in this build",
    "The {count} execution providers ONNX Runtime knows; {available} in this build",
    len(table),
).format(count=number(len(table)), available=number(len(available)))
with st.expander(known):
    providers_section(table)

with st.form("partition_form"):
    chosen = st.multiselect(
        _("Execution providers, in order of preference (the order you pick them in)"),
        [p.name for p in table],
        default=partition_view.default_providers(table),
        format_func={  # made here, in the run's language (a format_func may be called after the run)
            p.name: p.name if p.available else _("{name} (not in this build)").format(name=p.name) for p in table
        }.__getitem__,
        key="partition_providers" if runtime == "default" else f"partition_providers_{runtime}",
    )
    left, right = st.columns(2)
    level = left.selectbox(
        _("Optimization level of the session"),
        list(LEVELS),
        index=list(LEVELS).index(partition_view.default_level()),
        format_func=lambda k: LEVELS[k].name,
        key="partition_level",
    )
    simulate = right.multiselect(
        _("Also simulate providers this machine lacks"),
        list(SIMULATED),
        default=list(SIMULATED),
        format_func=lambda k: SIMULATED[k].name,
        key="partition_simulate",
    )
    st.form_submit_button(_("Partition"), type="primary")

session.set_page_param("level", level if level != "all" else "")  # a reload or a link shows the same level
request = PartitionRequest(path=record.path, providers=chosen or None, level=level, simulate=simulate, runtime=runtime)
label = _("Partitioning “{name}”").format(name=record.name)
levels = jobs.kept(OPTIMIZE, record.id)
# five sessions of ONNX Runtime over the whole graph: on a very large model that is minutes of a small
# machine's time, so there it waits to be asked for, and the partition above does not wait for it
waits = levels is None and (record.node_count or 0) > partition_view.LEVELS_ON_REQUEST
levels_request = LevelsRequest(path=record.path)
small = (record.node_count or 0) <= partition_view.LEVELS_BEFORE_GRAPH  # its graph waits for the levels (below)
# the partition and levels come from one job (one worker; the partition's session built beside the levels', the ALL
# session once), unless this partition is kept already (its levels failed: they are asked for alone below); on a
# large model the partition is then drawn once its levels are made, not before them, and sooner for it
together = levels is None and not waits and runtime == "default"
together = together and jobs.kept(PARTITION, record.id, request) is None
if not small:
    start_graph(record)  # the graph the partition is drawn on, laid out while the partition runs
if levels is None and not waits and not together:  # the levels beside the partition: neither needs the other
    jobs.start(OPTIMIZE, levels_request, model=record.id)
if small:
    start_graph(record)
if together:
    result, levels = partition_view.partition_with_levels(request, levels_request, label, record.id)
else:
    result = jobs.run(PARTITION, request, label, model=record.id, reuse=True)

# a provider asked for that this runtime lacks is the real partition's first warning (core.runtime.fallback)
if len(result.reports) > 1:
    share_section(result)
titles = [say(r.title) for r in result.reports]
shown = (
    st.radio(
        _("Partition"), titles, horizontal=True, key="partition_shown", help=_("Simulated ones ran on no hardware")
    )
    if len(titles) > 1
    else titles[0]
)
index = titles.index(shown) if shown in titles else 0
above = st.container()  # the graph and the partition's tables, drawn below once the levels of a small model are in

st.header(_("The graph at each optimization level"), anchor="levels")
st.markdown(
    _(
        "The same model optimized at each level, as ONNX Runtime would run it on this machine's CPU: how many nodes "
        "are left, and which nodes were fused into which. Fused kernels such as `FusedConv` (a convolution with its "
        "activation) save a pass over memory per node they replace."
    )
)
levels_label = _("Optimizing “{name}” at every level").format(name=record.name)
failed = False
if levels is None and not waits and small:
    # a small model's levels (started beside the partition) end about when it does: the graph waits for them and
    # is drawn once with what each level did, rather than drawn, then the page run again to colour it
    levels = jobs.run_or_show(OPTIMIZE, levels_request, levels_label, model=record.id, reuse=True)
    failed = levels is None  # said where its status was: the partition's graph and tables are drawn all the same
# the graph comes first, coloured by provider; what the optimizer did at each level colours it too once the
# levels below are made (on a larger model the page then runs again, so the first picture does not wait for them)
with above:
    view = graph_of(record)
    colourings: dict[str, Colouring] = {}
    if view is not None:
        colourings["provider"] = provider_colouring(view, result.reports[index])
        for key in ("basic", "extended", "layout", "all"):  # what the optimizer fused, replaced or removed there
            done = level_colouring(levels, key) if levels is not None else None
            if done is not None and done.keys:
                colourings[key] = done
    report_section(result.reports[index], view, f"partition_graph_{record.id[:12]}_{index}", colourings)
    runtime_view.compare_section(result, request, f"partition_{record.id[:12]}")

if waits and not st.button(
    _("Optimize at every level"),
    key=f"levels_go_{record.id[:12]}",
    help=_("Builds the graph five times with ONNX Runtime; on a model this size that takes minutes"),
):
    st.info(
        _(
            "This model has {count} nodes: optimizing it at each of the five levels takes minutes on a small machine, "
            "so it starts when you ask."
        ).format(count=number(record.node_count or 0))
    )
elif (
    levels is None and not failed
):  # its output folder is made only when the job runs (or was started beside the partition)
    levels = jobs.run(OPTIMIZE, levels_request, levels_label, model=record.id, reuse=True)
    if view is not None:
        st.rerun()  # the graph above can now show what each level did
if levels is not None:
    levels_section(levels, record.name, key=f"levels_{record.id[:12]}")

next_steps("benchmark", "quantize")
