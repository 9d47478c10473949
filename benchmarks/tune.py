"""Tune against ONNX Runtime's defaults and against Olive's session-parameter tuning, on the samples and a real
packaged model: the latency of what each chose, measured side by side by our harness, and the time each took to
decide.

Run: nice -n 19 .venv/bin/python benchmarks/tune.py [--budget 20] [--models tinycnn,mlp,ocr_cls]
For each model: Tune (core.tune.run_tune, in this process) with --budget seconds, and again on the session settings
alone (no variants, batch 1: what Olive searches); Olive 0.13's
OrtSessionParamsTuning pass, run from Python as a workflow (its sequential search over intra/inter threads,
execution mode and optimization level, judged by Olive's own latency metric) with max_time = the same budget;
then ONNX Runtime's defaults, Tune's two choices and Olive's choice opened afresh and timed in the same interleaved
rounds by core.runtime.harness (15 s). Prints each one's median with its 95 % interval (per sample where Tune chose
a batch) and the seconds each tool took to decide. No network: Olive runs on the local system with dummy data.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.model.inputs import BenchInput, make_inputs, plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.model.measured import MeasuredModel
from core.runtime.harness import Config, measure, result_of
from core.tune import SessionConfig, TuneReport, TuneRequest, run_tune
from core.tune.records import Candidate
from core.tune.sessions import harness_config

SAMPLES = ("tinycnn", "mlp")
REAL = ("ocr_cls",)


def _onnx(name: str, folder: Path) -> Path:
    if name in REAL:
        from tests.real_models import real_model

        return real_model(name)
    from tests.builders import exported_sample

    return exported_sample(name, folder)


def _olive(path: Path, plan: list[BenchInput], budget: float, work: Path) -> tuple[dict[str, Any], float]:
    """Olive's choice (its inference settings) and the seconds it took."""
    import olive.resource_path as resource_path
    from olive.search.search_parameter import Categorical
    from olive.workflows import run as olive_run

    original = resource_path.create_resource_path

    def tolerant(value: Any) -> Any:  # Olive 0.13 trips on a config dict whose "type" is None: not a resource
        try:
            return original(value)
        except AttributeError as exc:
            raise ValueError(str(exc)) from exc

    resource_path.create_resource_path = tolerant
    shapes = [list(s.shape) for s in plan]
    config = {
        "input_model": {"type": "ONNXModel", "model_path": str(path)},
        "systems": {
            "local": {
                "type": "LocalSystem",
                "accelerators": [{"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}],
            }
        },
        "data_configs": [
            {
                "name": "dummy",
                "type": "DummyDataContainer",
                "load_dataset_config": {
                    "type": "dummy_dataset",
                    "input_shapes": shapes,
                    "input_names": [s.name for s in plan],
                    "input_types": [s.dtype for s in plan],
                    "max_samples": 32,
                },
            }
        ],
        "passes": {
            "tune": {
                "type": "OrtSessionParamsTuning",
                "data_config": "dummy",
                "intra_thread_num_list": Categorical([None, 1, 2]),
                "inter_thread_num_list": Categorical([None, 1, 2]),
                "execution_mode_list": Categorical([None, 0, 1]),
                "opt_level_list": Categorical([None, 0, 1, 2, 99]),
            }
        },
        "search_strategy": {"execution_order": "joint", "sampler": "sequential", "max_time": int(budget)},
        "evaluator": {
            "metrics": [
                {
                    "name": "latency",
                    "type": "latency",
                    "sub_types": [{"name": "avg", "priority": 1}],
                    "data_config": "dummy",
                }
            ]
        },
        "host": "local",
        "target": "local",
        "output_dir": str(work / "olive-out"),
        "cache_dir": str(work / "olive-cache"),
        "log_severity_level": 3,
    }
    started = time.perf_counter()
    output = olive_run(config)
    seconds = time.perf_counter() - started
    models = output.get_output_models()
    settings = models[0].get_inference_config() if models else {}
    return settings, seconds


def _olive_config(settings: dict[str, Any]) -> SessionConfig:
    """Olive's inference settings as our SessionConfig (None: ORT's default)."""
    options = settings.get("session_options") or {}
    levels = {0: "disable", 1: "basic", 2: "extended", 99: "all"}
    mode = options.get("execution_mode")
    return SessionConfig(
        intra_op_threads=int(options.get("intra_op_num_threads") or 0),
        inter_op_threads=int(options.get("inter_op_num_threads") or 0),
        execution_mode="parallel" if mode == 1 else "sequential",
        level=levels.get(options.get("graph_optimization_level") or 99, "all"),
        io_binding=bool(settings.get("io_bind")),
    )


def _side_by_side(
    path: Path, plan: list[BenchInput], report: TuneReport, plain: SessionConfig, olive: SessionConfig, seconds: float
) -> dict[str, Candidate]:
    """The defaults, Tune's choices and Olive's choice, opened afresh and timed in the same rounds."""
    chosen = {"ORT defaults": SessionConfig(), "Tune": report.best.config, "Tune, sessions": plain, "Olive": olive}
    candidates = {name: Candidate(config=c, label=name, stage="final") for name, c in chosen.items()}
    configs: list[tuple[Candidate, Config]] = []
    for c in candidates.values():
        model = report.variant_paths.get(c.config.variant, str(path))
        configs.append((c, harness_config(c, model, plan, 0)))
    probe = configs[0][1]
    probe.run()
    start = time.perf_counter()
    probe.run()
    call = max(time.perf_counter() - start, 1e-6) * sum(c.config.batch for c in candidates.values())
    iterations = int(min(5000, max(50, 0.7 * seconds / call)))
    measure([cfg for _c, cfg in configs], iterations, 10, seconds, [], lambda f, m: None)
    for c, cfg in configs:
        c.result = result_of(cfg)
    return candidates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds each tool may take to decide")
    parser.add_argument("--models", default=",".join(SAMPLES + REAL))
    parser.add_argument("--measure", type=float, default=15.0, help="seconds of the side-by-side measurement")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="tune-bench-"))
    try:
        for name in args.models.split(","):
            path = _onnx(name, work)
            plan = plan_inputs(describe_files(IntakeRequest(paths=[str(path)])))
            make_inputs(plan, 1)  # refuses a plan with an open size before any tool starts
            model = MeasuredModel(path=str(path), inputs=plan, name=name)
            started = time.perf_counter()
            report = run_tune(TuneRequest(model=model, out_dir=str(work / f"{name}-tuned"), budget_s=args.budget))
            tune_s = time.perf_counter() - started
            started = time.perf_counter()  # sessions alone, as Olive searches them: no variants, no batch
            plain = run_tune(
                TuneRequest(
                    model=model, out_dir=str(work / f"{name}-plain"), budget_s=args.budget, variants=[], batches=[1]
                )
            )
            plain_s = time.perf_counter() - started
            olive_settings, olive_s = _olive(path, plan, args.budget, work / name)
            olive = _olive_config(olive_settings)
            measured = _side_by_side(path, plan, report, plain.best.config, olive, args.measure)
            _print(name, report, {"Tune": tune_s, "Tune, sessions": plain_s, "Olive": olive_s}, measured)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _print(name: str, report: TuneReport, took: dict[str, float], measured: dict[str, Candidate]) -> None:
    from core.tune.search import config_label

    print(f"\n== {name} (budget {report.budget_s:g} s) ==")
    print(f"Tune said: {report.headline}")
    for label, c in measured.items():
        low, high = c.ci_ms
        unit = "ms per sample" if c.config.batch > 1 else "ms"
        decide = f", decided in {took[label]:.1f} s" if label in took else ""
        print(
            f"  {label:<15} {config_label(c.config):<40} median {c.median_ms:.4f} {unit} "
            f"(95 % CI {low:.4f}–{high:.4f}){decide}"
        )


if __name__ == "__main__":
    main()
