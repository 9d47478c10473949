"""The ONNX Runtime library: sessions and providers, partitioning, optimization levels, the timing harness,
output comparison, statistics and graph layout."""
