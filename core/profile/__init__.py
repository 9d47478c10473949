"""Profile: where one call's time goes, node by node in ONNX Runtime and layer by layer in PyTorch eager."""

from __future__ import annotations

from core.profile.profiler import profile_model
from core.profile.records import ProfileReport, ProfileRequest

__all__ = ["ProfileReport", "ProfileRequest", "profile_model"]
