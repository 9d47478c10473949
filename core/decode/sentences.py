"""What Decode says: each sentence a catalog entry, kept in the decoded model as a note (core.notes: the template
and its values) and said in the reader's language where it is shown (the Decode page, `python -m core inspect`;
its JSON in English)."""

from __future__ import annotations

from core.i18n import N_

__all__ = [
    "BYTES_FOLLOW",
    "CHECKER_OK",
    "CONSTANT_NODE",
    "CUSTOM_DOMAIN",
    "CYCLE",
    "DEFAULT_DOMAIN",
    "EXTERNAL",
    "INLINE",
    "MESSAGE_OF",
    "NESTED",
    "NEWER_IR",
    "NEWER_OPSET",
    "NOT_PARSED",
    "NOT_UTF8",
    "NO_GRAPH",
    "OPSET_VALUE",
    "OPSET_MESSAGE",
    "OTHER_WIRE",
    "TAG",
    "UNUSED_DOMAIN",
    "UNUSED_DOMAINS",
    "UTF8",
    "VARINT",
]

# the first bytes (core.decode.header): the "how to read it" column and the "value" column
TAG = N_("tag {bytes} = field {number} << 3 | wire type {wire}")
VARINT = N_("{tag} (varint); the varint that follows is {value}.")
BYTES_FOLLOW = N_("{tag} (length-delimited); the length prefix says {count} bytes follow")
UTF8 = N_("{prefix}: a UTF-8 string.")
OPSET_MESSAGE = N_("{prefix}: an OperatorSetIdProto message.")
NESTED = N_("{prefix}: a nested message.")
OTHER_WIRE = N_("{tag} ({wire}).")
DEFAULT_DOMAIN = N_("'' (the default domain, ai.onnx)")
OPSET_VALUE = N_("domain {domain}, version {version}")
MESSAGE_OF = N_("{kind} of {count} bytes")
# where a weight is stored
INLINE, CONSTANT_NODE = N_("inline"), N_("constant node")
EXTERNAL = N_("external: {file} @ {offset}")
# what the decoder found
CHECKER_OK = N_("onnx.checker finds no problem.")
NEWER_IR = N_(
    "IR version {version} is newer than this onnx library knows ({known}); fields added since may be missing below."
)
NEWER_OPSET = N_(
    "Opset {version} is newer than this onnx library knows ({known}); operators are listed but cannot be checked."
)
CUSTOM_DOMAIN = N_("Operator domain '{domain}' is not a standard one: its ops are custom.")
UNUSED_DOMAIN = N_(
    "Operator domain {domain} is declared in the model's opset imports but no node uses it: nothing custom runs."
)
UNUSED_DOMAINS = N_(
    "Operator domains {domains} are declared in the model's opset imports but no node uses them: nothing custom runs."
)
CYCLE = N_("The main graph has a cycle: ONNX graphs must be acyclic, so no runtime will run it.")
NOT_PARSED = N_(
    "The file could not be parsed as a ModelProto ({error}); only its first fields are shown. It may be truncated "
    "or not an ONNX file."
)
NOT_UTF8 = N_(
    "{count} text field(s) are not UTF-8, as ONNX requires ({first}…); they are shown with the invalid bytes "
    "replaced by �."
)
NO_GRAPH = N_("The model has no graph: there is nothing to run.")
