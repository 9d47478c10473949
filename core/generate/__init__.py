"""Generate: a language model run token by token, greedy, measured; PyTorch eager beside ONNX Runtime, token by
token (docs/cli.md, ``python -m core generate``). Its loops are core.runtime.greedy (ONNX Runtime),
core.runtime.greedy_eager (PyTorch) and core.runtime.greedy_prompt (the cache and the prompt): Export and Quantize run
them too."""

from core.generate.records import EngineRun, GenerateReport, GenerateRequest, Percentiles

__all__ = ["EngineRun", "GenerateReport", "GenerateRequest", "Percentiles"]
