"""Benchmark's generate panel, for a language model: what to generate (a prompt's length, its ids, or a text for
the tokenizer beside the model), run token by token in the worker under the machine's lock (core.generate), and
what came back: the time to the first token, tokens per second with their intervals, inter-token percentiles, the
cache and the worker's peak memory, each token's latency for ONNX Runtime and PyTorch eager on one chart, and the
tokens side by side with the step where they part. The form's choices are kept in the page's address (ui.kept_form):
a reload or a link opens it as it was last used."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from core.errors import WorkbenchError
from core.generate.records import EngineRun, GenerateReport, GenerateRequest
from core.generate.words import headline
from core.i18n import N_, _, number, pgettext
from core.jobs import GENERATE
from core.model import ModelRecord
from core.model.cache_config import CONFIG_FILE
from core.model.generative import NEW_TOKENS, PROMPT_LENGTH, GenerativeLayout, GenerativePlan
from core.model.hf_folder import folder_tokenizer
from core.notes import say, significant
from core.runtime.machine import default_threads
from core.runtime.ort import LEVELS
from core.runtime.stats import Interval
from ui import jobs, session
from ui.kept_form import Choice
from ui.text import md_escape
from ui.token_chart import token_latency_figure

__all__ = ["figures_frame", "generate_section", "reference_folder", "steps_frame", "tokens_frame"]

MOST_NEW_TOKENS = 4096
MOST_PROMPT_TOKENS = 65_536
# the form's choices, as the page's address keeps them (ui.kept_form): the widget's name -> its row
KEPT = {
    "prompt_kind": Choice(param="gen_prompt", default="length", options=("length", "ids", "text")),
    "length": Choice(param="gen_len", default=PROMPT_LENGTH, low=1, high=MOST_PROMPT_TOKENS),
    "seed": Choice(param="gen_seed", default=0),
    "ids": Choice(param="gen_ids", default=""),
    "text": Choice(param="gen_text", default=""),
    "new": Choice(param="gen_new", default=NEW_TOKENS, low=1, high=MOST_NEW_TOKENS),
    "batch": Choice(param="gen_batch", default=1, low=1, high=64),
    "runs": Choice(param="gen_runs", default=5, low=1, high=100),
    "level": Choice(param="gen_level", default="all", options=tuple(LEVELS)),
    "eager": Choice(param="gen_eager", default=True),
    "reference": Choice(param="gen_ref", default=""),
}


def reference_folder(record: ModelRecord, torch_record: ModelRecord | None) -> str:
    """The Hugging Face folder the model came from, when this session knows it: its PyTorch original is one, or the
    model is an ONNX file of a folder that holds config.json and safetensors weights."""
    if torch_record is not None and torch_record.format == "hf":
        return str(torch_record.path)
    folder = Path(record.folder) if record.folder else None
    if folder is not None and (folder / CONFIG_FILE).is_file() and any(folder.glob("*.safetensors")):
        return str(folder)
    return ""


def _cache_said(layout: GenerativeLayout) -> str:
    """The cache as the worker found it, in a line."""
    said = _(
        "{layers} layers, {kv_heads} key/value heads of {size}, a vocabulary of {vocabulary}, the cache in {dtype}"
    ).format(
        layers=number(len(layout.layers)),
        kv_heads=number(layout.kv_heads),
        size=number(layout.head_size),
        vocabulary=number(layout.vocabulary),
        dtype=layout.kv_dtype,
    )
    if layout.attention:
        said += pgettext("list", ", ") + _("attention by {op}").format(op=layout.attention)
    if layout.weight_bits:
        said += pgettext("list", ", ") + _("{bits}-bit weights (MatMulNBits)").format(bits=layout.weight_bits)
    return said


def _ids(text: str) -> list[int]:
    """Token ids as typed: whole numbers separated by commas or spaces."""
    parts = text.replace(",", " ").replace("，", " ").split()
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise WorkbenchError(
            _(
                "Give the prompt's token ids as whole numbers separated by commas, e.g. 9707, 11, 1879; got '{text}'."
            ).format(text=text[:80])
        ) from None


def _reference(record: ModelRecord, torch_record: ModelRecord | None) -> str:
    """The PyTorch reference's folder the person chose, or ""."""
    known = reference_folder(record, torch_record)
    if known:
        use = st.checkbox(
            _("PyTorch eager beside it: the Hugging Face folder “{name}” it came from").format(
                name=md_escape(Path(known).name, 80)
            ),
            value=KEPT["eager"].initial() is True,
            key="generate_eager",
        )
        KEPT["eager"].keep(use)
        return known if use else ""
    if session.settings().hosted:
        st.caption(
            _(
                "For PyTorch eager beside it, open the Hugging Face folder this model came from on the Model page "
                "(config.json and .safetensors weights) and export it: its eager run is then offered here."
            )
        )
        return ""
    typed = st.text_input(
        _("PyTorch reference (optional): a Hugging Face folder on this machine"),
        value=KEPT["reference"].text(),
        key="generate_reference_path",
        placeholder="/home/me/models/Qwen2-0.5B",
        help=_("config.json with .safetensors weights, as save_pretrained writes them; nothing is fetched."),
    ).strip()
    KEPT["reference"].keep(typed)
    if typed and not (Path(typed).expanduser() / "config.json").is_file():
        st.warning(_("No config.json in that folder: give a Hugging Face folder (config.json and weights)."))
        return ""
    return str(Path(typed).expanduser().resolve()) if typed else ""


@dataclass(frozen=True, kw_only=True)
class _Prompt:
    """What the prompt's widgets asked: a drawn prompt's length and seed, typed ids, or a text."""

    length: int = PROMPT_LENGTH
    seed: int = 0
    ids: str = ""
    text: str = ""

    @property
    def empty(self) -> bool:
        """Ids or a text were asked for and none was given."""
        return self.ids.strip() == "" and self.text.strip() == "" and self.length == 0


def _drawn() -> _Prompt:
    left, right = st.columns([2, 1])
    length = left.number_input(
        _("Prompt tokens"), 1, MOST_PROMPT_TOKENS, KEPT["length"].number(), key="generate_prompt_length"
    )
    seed = right.number_input(_("Seed of the drawn ids"), 0, 2**31 - 1, KEPT["seed"].number(), key="generate_seed")
    return _Prompt(length=int(length), seed=int(seed))


def _typed_ids() -> _Prompt:
    box = st.columns([2, 1])[0]
    ids = box.text_input(
        _("The prompt's token ids"), KEPT["ids"].text(), key="generate_prompt_ids", placeholder="9707, 11, 1879"
    )
    return _Prompt(length=0, ids=ids)


def _text() -> _Prompt:
    text = st.text_area(
        _("The prompt"), KEPT["text"].text(), key="generate_prompt_text", placeholder=_("Hello, world."), height=90
    )
    return _Prompt(length=0, text=text)


# where a prompt comes from: the radio's option -> (its words, its widgets); "text" needs a tokenizer
PROMPT_SOURCES = {
    "length": (N_("drawn ids"), _drawn),
    "ids": (N_("token ids"), _typed_ids),
    "text": (N_("text (the model's tokenizer)"), _text),
}


def _keep(source: str, prompt: _Prompt, chosen: dict[str, int | str | bool]) -> None:
    """The submitted form in the page's address, so that a reload or a link opens it as it was: the prompt's source
    and its own widgets (the other sources' are left as they were), and the sizes."""
    by_source: dict[str, dict[str, int | str | bool]] = {
        "length": {"length": prompt.length, "seed": prompt.seed},
        "ids": {"ids": prompt.ids},
        "text": {"text": prompt.text},
    }
    asked = by_source[source]
    for name, value in ({"prompt_kind": source} | asked | chosen).items():
        KEPT[name].keep(value)


def _plan(layout: GenerativeLayout, tokenizer: str) -> GenerativePlan | None:
    """The prompt and the sizes, from the form's widgets (None: the button was not pressed); a text prompt when the
    model has a tokenizer (beside it, or ``tokenizer``)."""
    sources = list(PROMPT_SOURCES) if layout.tokenizer or tokenizer else list(PROMPT_SOURCES)[:2]
    words = {source: _(label) for source, (label, _widgets) in PROMPT_SOURCES.items()}  # in the reader's language
    kept = KEPT["prompt_kind"].text()
    source = st.radio(
        _("Prompt"),
        sources,
        index=sources.index(kept) if kept in sources else 0,
        format_func=words.__getitem__,
        horizontal=True,
        key="generate_prompt_kind",
    )
    with st.form("generate_form"):
        prompt = PROMPT_SOURCES[source][1]()
        new_box, batch_box, runs_box, threads_box, level_box = st.columns(5)
        new = new_box.number_input(_("New tokens"), 1, MOST_NEW_TOKENS, KEPT["new"].number(), key="generate_new")
        batch = batch_box.number_input(
            _("Sequences at once (batch)"), 1, 64, KEPT["batch"].number(), key="generate_batch"
        )
        runs = runs_box.number_input(_("Timed runs"), 1, 100, KEPT["runs"].number(), key="generate_runs")
        threads = threads_box.number_input(_("Intra-op threads"), 1, 256, default_threads(), key="generate_threads")
        level = level_box.selectbox(
            _("Optimization level"),
            list(LEVELS),
            index=list(LEVELS).index(KEPT["level"].text()),
            format_func=lambda k: LEVELS[k].name,
            key="generate_level",
        )
        pressed = st.form_submit_button(_("Generate"), type="primary")
    if not pressed:
        return None
    _keep(source, prompt, {"new": int(new), "batch": int(batch), "runs": int(runs), "level": str(level)})
    if prompt.empty:
        raise WorkbenchError(_("The prompt is empty: give its ids or its text, or draw a prompt of a given length."))
    st.session_state["generate_settings"] = (int(runs), int(threads), str(level))
    return GenerativePlan(
        prompt_length=prompt.length or PROMPT_LENGTH, new_tokens=int(new), batch=int(batch),
        prompt_ids=_ids(prompt.ids) if prompt.ids.strip() else [], prompt_text=prompt.text, seed=prompt.seed,
    )  # fmt: skip


def _run(record: ModelRecord, plan: GenerativePlan, reference: str) -> None:
    runs, threads, level = st.session_state["generate_settings"]
    request = GenerateRequest(
        model=record.path, plan=plan, reference=reference, tokenizer=folder_tokenizer(record), name=record.name,
        model_id=record.id, runs=runs, threads=threads, level=level,
    )  # fmt: skip
    jobs.run(GENERATE, request, _("Generating from “{name}”").format(name=record.name), model=record.id)


def _figure(value: Interval) -> str:
    return f"{significant(value.median)} ({significant(value.low)}–{significant(value.high)})"


def steps_frame(report: GenerateReport) -> pd.DataFrame:
    """Each engine's latency per generated token: engine, label, step, ms (the chart's frame)."""
    runs = [r for r in (report.ort, report.eager) if r is not None]
    rows = [(r.engine, r.label, step, ms) for r in runs for step, ms in enumerate(r.step_ms)]
    return pd.DataFrame(rows, columns=["engine", "label", "step", "ms"])


def figures_frame(runs: list[EngineRun]) -> pd.DataFrame:
    """What each engine measured: one row per figure, one column per engine."""
    rows = {
        _("time to first token, ms (95 % CI)"): [_figure(r.ttft_ms) for r in runs],
        _("prefill, tokens/s (95 % CI)"): [_figure(r.prefill_tok_s) for r in runs],
        _("decoding, tokens/s (95 % CI)"): [_figure(r.decode_tok_s) for r in runs],
        _("between tokens, ms: p50 / p95 / p99"): [
            " / ".join(significant(v) for v in (r.inter_token_ms.p50, r.inter_token_ms.p95, r.inter_token_ms.p99))
            for r in runs
        ],
        _("KV cache, MB"): [significant(r.kv_cache_mb) for r in runs],
        _("peak memory of the worker, MB"): [significant(r.peak_rss_mb) for r in runs],
        _("loading, ms"): [significant(r.load_ms) for r in runs],
    }
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=[r.label for r in runs])
    return frame.rename_axis(_("figure")).reset_index()


def _shown_piece(piece: str) -> str:
    """A token's text as a cell shows it: spaces and line breaks made visible (a cell renders no markup)."""
    return piece.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")


def tokens_frame(report: GenerateReport, sequence: int = 0) -> pd.DataFrame:
    """One row per generated step of ``sequence``: each engine's id (and text, with a tokenizer), the step's
    largest logit difference, and a mark on the step where the tokens part."""
    runs = [r for r in (report.ort, report.eager) if r is not None]
    steps = len(report.ort.tokens[sequence])
    frame = pd.DataFrame({_("step"): list(range(steps))})
    for run in runs:
        frame[run.label] = run.tokens[sequence]
        if run.pieces and run.pieces[sequence]:  # with a tokenizer: the text each token adds
            frame[_("{engine}: text").format(engine=run.label)] = [_shown_piece(p) for p in run.pieces[sequence]]
    if report.logit_diffs:
        frame[_("largest logit difference")] = [f"{d:.2e}" for d in report.logit_diffs[:steps]]
    if report.eager is not None:
        parted = [o != e for o, e in zip(report.ort.tokens[sequence], report.eager.tokens[sequence], strict=True)]
        first = next((step for step, differ in enumerate(parted) if differ), None)
        frame[_("tokens")] = [
            _("◀ the first to part") if step == first else _("differ") if differ else _("same")
            for step, differ in enumerate(parted)
        ]
    return frame


def _highlighted(frame: pd.DataFrame, step: int | None) -> object:
    """The table with the step where the tokens part shaded (a Styler; the frame itself without one)."""
    if step is None:
        return frame
    return frame.style.apply(
        lambda row: ["background-color: #fde2dd" if row.name == step else "" for _cell in row], axis=1
    )


def _tokens_section(report: GenerateReport) -> None:
    st.markdown(_("**The tokens, side by side**"))
    batch = len(report.ort.tokens)
    sequence = 0
    if batch > 1:
        sequence = st.selectbox(
            _("Sequence"), list(range(batch)), format_func=lambda i: number(i + 1), key="generate_sequence"
        )
    prompt = report.prompt_ids[sequence]
    ids = pgettext("list", ", ").join(str(i) for i in prompt[:32]) + ("…" if len(prompt) > 32 else "")
    st.caption(_("The prompt: {count} tokens ({ids})").format(count=number(len(prompt)), ids=ids))
    runs = [r for r in (report.ort, report.eager) if r is not None]
    if report.prompt_text:  # text the model's tokenizer wrote: shown as code, never as Markdown
        st.code(report.prompt_text[sequence], language=None, wrap_lines=True)
        for run in runs:
            st.caption(_("{engine} continued:").format(engine=md_escape(run.label, 80)))
            st.code(run.text[sequence] if run.text else "", language=None, wrap_lines=True)
    frame = tokens_frame(report, sequence)
    parted = _("tokens") in frame and (frame[_("tokens")] != _("same")).any()
    first = int(frame.index[frame[_("tokens")] != _("same")][0]) if parted else None
    st.dataframe(_highlighted(frame, first), hide_index=True, width="stretch")
    notes = [_("Step 0 is the first generated token.")]
    if any(any(r.pieces) for r in runs):
        notes.append(
            _(
                "A token's text shows spaces as ␣ and line breaks as ↵; a blank cell is a token that holds part of "
                "a character, said whole on the token that completes it."
            )
        )
    if report.logit_diffs:
        notes.append(
            _(
                "The logit difference compares both engines on the same context: PyTorch was fed ONNX Runtime's "
                "tokens for it."
            )
        )
    st.caption(" ".join(notes))


def results_section(report: GenerateReport) -> None:
    """What a generation measured and found."""
    runs = [r for r in (report.ort, report.eager) if r is not None]
    st.subheader(md_escape(say(headline(report.ort, len(report.prompt_ids[0]))), 400))
    for note in report.notes:
        if note.severity == "warning":
            st.warning(md_escape(say(note), 800))
        else:
            st.caption(md_escape(say(note), 800))
    first, decode, cache, peak = st.columns(4)
    first.metric(_("Time to first token"), _("{ms} ms").format(ms=significant(report.ort.ttft_ms.median)))
    decode.metric(_("Decoding, tokens/s"), significant(report.ort.decode_tok_s.median))
    cache.metric(_("KV cache"), f"{significant(report.ort.kv_cache_mb)} MB")
    peak.metric(_("Peak memory (the worker's)"), f"{significant(report.ort.peak_rss_mb)} MB")
    st.dataframe(figures_frame(runs), hide_index=True, width="stretch")
    st.markdown(
        _(
            "**Each token's latency**, the median over {runs} runs: the first token waits for the whole prompt (the "
            "prefill); each one after it is one step with the cache, a little slower as the cache grows."
        ).format(runs=number(report.runs))
    )
    st.plotly_chart(
        token_latency_figure(steps_frame(report), report.first_divergent_token),
        key="generate_chart",
        config={"displaylogo": False},
    )
    _tokens_section(report)


def generate_section(record: ModelRecord, torch_record: ModelRecord | None) -> None:
    """The panel, for a language model (its record has a cache's layout); nothing for any other model."""
    layout = record.generative
    if layout is None:
        return
    st.header(_("Generate, token by token"), anchor="generate")
    st.markdown(
        _(
            "One call of a language model means little: its users wait for the first token, then read tokens one "
            "by one. Generate runs the model greedily, its cache kept in ONNX Runtime's own buffers, and measures "
            "the time to the first token, tokens per second and the time between tokens, each over several runs "
            "with its 95 % CI. With its PyTorch original, eager runs the same loop beside it, token by token."
        )
    )
    st.caption(_("The model: {cache}.").format(cache=md_escape(_cache_said(layout), 400)))
    reference = _reference(record, torch_record)
    try:
        plan = _plan(layout, folder_tokenizer(record))
        if plan is not None:
            _run(record, plan, reference)
    except WorkbenchError as exc:
        jobs.show_error(exc)
    report = jobs.kept(GENERATE, record.id)
    if report is not None:
        results_section(report)
    else:
        st.info(_("Choose the prompt and press **Generate**."))
    st.header(_("One call at a time"), anchor="one-call")
    st.caption(
        _(
            "Below, the benchmark times single calls of the model on its input plan: the prefill of a prompt from an "
            "empty cache."
        )
    )
