"""Generate: a language model run token by token, greedy, measured; PyTorch eager beside ONNX Runtime, token by
token (docs/cli.md, ``python -m core generate``)."""

from core.generate.records import EngineRun, GenerateReport, GenerateRequest, GenerativePlan, Interval, Percentiles

__all__ = ["EngineRun", "GenerateReport", "GenerateRequest", "GenerativePlan", "Interval", "Percentiles"]
