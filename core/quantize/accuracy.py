"""How far a variant's outputs are from the float32 model's, measured one way for the comparison table and
for FP16's own check while it is made; and feeds cast to what a session takes."""

from __future__ import annotations

import math
from typing import Any

from core.errors import QuantizeError
from core.i18n import _
from core.quantize.records import Accuracy
from core.runtime.ort import NUMPY_TYPES
from core.runtime.outputs import max_abs_diff

__all__ = ["accuracy", "outputs", "typed"]


def _flat(outputs: list[Any]) -> Any:
    import numpy as np

    return np.concatenate([np.asarray(o, dtype=np.float64).ravel() for o in outputs]) if outputs else np.zeros(0)


def accuracy(reference: list[list[Any]], produced: list[list[Any]]) -> Accuracy:
    """Max and mean absolute error, cosine similarity and (for [batch, classes] outputs) top-1 agreement."""
    import numpy as np

    errors, dots, top1, worst, magnitudes = [], [], [], 0.0, []
    for ref, got in zip(reference, produced, strict=True):
        a, b = _flat(ref), _flat(got)
        magnitudes.append(np.abs(a[np.isfinite(a)]))
        if a.shape != b.shape:
            raise QuantizeError(_("The variant's outputs have other shapes than the original's."))
        worst = max(worst, max_abs_diff(ref, got))
        errors.append(np.abs(a - b))
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        dots.append(float(a @ b) / norm if norm > 0 else float(np.array_equal(a, b)))
        first_ref, first_got = np.asarray(ref[0]), np.asarray(got[0])
        if first_ref.ndim == 2 and first_ref.shape[1] > 1:  # classifier-shaped: [batch, classes]
            top1.extend((first_ref.argmax(axis=1) == first_got.argmax(axis=1)).tolist())
    error = np.concatenate(errors) if errors else np.zeros(0)
    finite = error[np.isfinite(error)]
    return Accuracy(
        samples=len(reference),
        max_abs_error=worst,
        mean_abs_error=float(finite.mean()) if finite.size else math.nan,
        cosine_similarity=float(np.mean(dots)) if dots else math.nan,
        top1_agreement=float(np.mean(top1)) if top1 else None,
        reference_mean_abs=float(np.concatenate(magnitudes).mean())
        if magnitudes and any(m.size for m in magnitudes)
        else 0.0,
    )


def typed(session: Any, feed: dict[str, Any]) -> dict[str, Any]:
    """The feed cast to what this session's inputs take (an fp16 variant may take float16)."""
    return {
        i.name: feed[i.name].astype(NUMPY_TYPES[i.type]) if i.type in NUMPY_TYPES else feed[i.name]
        for i in session.get_inputs()
    }


def outputs(session: Any, feed: dict[str, Any]) -> list[Any]:
    return list(session.run(None, typed(session, feed)))
