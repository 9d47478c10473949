"""Upgrade: a model written in an old opset, brought to a newer one with onnx's version converter, as a new
version of the model, checked against the original."""

from __future__ import annotations

from core.upgrade.records import DEFAULT_UPGRADE_OPSET, OpChange, UpgradeReport, UpgradeRequest

__all__ = ["DEFAULT_UPGRADE_OPSET", "OpChange", "UpgradeReport", "UpgradeRequest"]
