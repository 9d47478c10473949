"""The Python that redoes a causal language model's export with its cache, in plain transformers, torch and ONNX
Runtime: the Export page's code and a notebook's cells are these lines (core.model.causal_lm does the same in the
app). Anything taken from a model (its folder's name) is written as a Python literal."""

from __future__ import annotations

from core.model.causal_lm import BATCH, PAST, SEQUENCE, TOTAL

__all__ = ["NEW_TOKENS", "PROMPTS", "export_lines", "greedy_lines", "load_lines"]

PROMPTS = ((1, 5), (1, 1), (2, 11))  # (batch, prompt length) of the prompts an export is verified on
NEW_TOKENS = 8  # generated from each


def load_lines(folder: str) -> list[str]:
    """The folder's model loaded offline (no code of the folder runs), and the wrapper that takes the past and gives
    the present as flat tensors, named ``model``; ``hf_model`` is transformers' own."""
    return [
        "import os",
        "os.environ['HF_HUB_OFFLINE'] = '1'  # the folder is all there is: nothing is fetched",
        "import torch",
        "from transformers import AutoModelForCausalLM, DynamicCache",
        "",
        f"FOLDER = {folder!r}",
        "hf_model = AutoModelForCausalLM.from_pretrained(",
        "    FOLDER, local_files_only=True, trust_remote_code=False, dtype=torch.float32",
        ").eval()",
        "config = hf_model.config",
        "LAYERS = config.num_hidden_layers",
        "KV_HEADS = getattr(config, 'num_key_value_heads', None) or config.num_attention_heads",
        "HEAD_SIZE = getattr(config, 'head_dim', None) or config.hidden_size // config.num_attention_heads",
        "PAST_NAMES = [f'past_key_values.{i}.{kind}' for i in range(LAYERS) for kind in ('key', 'value')]",
        "PRESENT_NAMES = [f'present.{i}.{kind}' for i in range(LAYERS) for kind in ('key', 'value')]",
        "",
        "",
        "class CausalLMWithCache(torch.nn.Module):",
        '    """The model with its past and present as flat tensors, named as optimum names them."""',
        "",
        "    def __init__(self, model):",
        "        super().__init__()",
        "        self.model = model",
        "",
        "    def forward(self, input_ids, attention_mask, position_ids, *past):",
        "        cache = DynamicCache(ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(LAYERS)])",
        "        out = self.model(",
        "            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, cache=cache,",
        "            use_cache=True,",
        "        )",
        "        return (out.logits, *[t for layer in out.cache.layers for t in (layer.keys, layer.values)])",
        "",
        "",
        "model = CausalLMWithCache(hf_model).eval()",
    ]


def export_lines(exporter: str, opset: int, output: str, optimize: bool = True) -> list[str]:
    """The example (every axis at a size of its own, at least 2) and the same torch.onnx.export call as the app's."""
    lines = [
        "# every axis at a size of its own, at least 2: torch.export treats a size of 0 or 1 as a constant",
        "batch, new, past = 2, 3, 5",
        "generator = torch.Generator().manual_seed(0)",
        "example = (",
        "    torch.randint(0, config.vocab_size, (batch, new), generator=generator),",
        "    torch.ones(batch, past + new, dtype=torch.int64),",
        "    torch.arange(past, past + new).unsqueeze(0).expand(batch, new).contiguous(),",
        "    *[torch.randn(batch, KV_HEADS, past, HEAD_SIZE, generator=generator) for _ in range(2 * LAYERS)],",
        ")",
        "input_names = ['input_ids', 'attention_mask', 'position_ids', *PAST_NAMES]",
        "output_names = ['logits', *PRESENT_NAMES]",
    ]
    if exporter == "dynamo":
        lines += [
            "Dim = torch.export.Dim",
            f"batch_size, sequence_length = Dim({BATCH!r}, max=4096), Dim({SEQUENCE!r}, max=1 << 20)",
            f"past_sequence_length = Dim({PAST!r}, max=1 << 20)",
            f"total_sequence_length = Dim({TOTAL!r}, max=1 << 21)  # the mask: past + new",
            "dynamic_shapes = {",
            "    'input_ids': {0: batch_size, 1: sequence_length},",
            "    'attention_mask': {0: batch_size, 1: total_sequence_length},",
            "    'position_ids': {0: batch_size, 1: sequence_length},",
            "    'past': tuple({0: batch_size, 2: past_sequence_length} for _ in PAST_NAMES),",
            "}",
            "torch.onnx.export(",
            f"    model, example, {output!r}, dynamo=True, opset_version={int(opset)},",
            "    input_names=input_names, output_names=output_names, dynamic_shapes=dynamic_shapes,",
            f"    optimize={optimize},",
            ")",
        ]
    else:
        lines += [
            "dynamic_axes = {",
            f"    'input_ids': {{0: {BATCH!r}, 1: {SEQUENCE!r}}},",
            f"    'attention_mask': {{0: {BATCH!r}, 1: {TOTAL!r}}},",
            f"    'position_ids': {{0: {BATCH!r}, 1: {SEQUENCE!r}}},",
            f"    'logits': {{0: {BATCH!r}, 1: {SEQUENCE!r}}},",
            f"    **{{name: {{0: {BATCH!r}, 2: {PAST!r}}} for name in PAST_NAMES}},",
            f"    **{{name: {{0: {BATCH!r}, 2: {TOTAL!r}}} for name in PRESENT_NAMES}},",
            "}",
            "torch.onnx.export(",
            f"    model, example, {output!r}, dynamo=False, opset_version={int(opset)},",
            "    input_names=input_names, output_names=output_names, dynamic_axes=dynamic_axes,",
            f"    do_constant_folding={optimize},",
            ")",
        ]
    return lines


def greedy_lines(output: str, prompts: tuple[tuple[int, int], ...], new_tokens: int) -> list[str]:
    """Greedy generation by PyTorch eager (its own cache) and by ONNX Runtime (the present fed back as the next
    past), on the same prompts, token by token: the tokens should be the same."""
    return [
        "import numpy as np",
        "import onnxruntime as ort",
        "",
        f"session = ort.InferenceSession({output!r}, providers=['CPUExecutionProvider'])",
        "",
        "",
        "def onnx_greedy(prompt, new_tokens):",
        "    batch = prompt.shape[0]",
        "    feeds = {name: np.zeros((batch, KV_HEADS, 0, HEAD_SIZE), np.float32) for name in PAST_NAMES}",
        "    ids, past, tokens = prompt, 0, []",
        "    for _ in range(new_tokens):",
        "        length = ids.shape[1]",
        "        feeds['input_ids'] = ids",
        "        feeds['attention_mask'] = np.ones((batch, past + length), np.int64)",
        "        feeds['position_ids'] = np.tile(np.arange(past, past + length), (batch, 1))",
        "        logits, *present = session.run(None, feeds)",
        "        chosen = logits[:, -1].argmax(-1)",
        "        tokens.append(chosen)",
        "        feeds.update(zip(PAST_NAMES, present))  # the present is the next step's past",
        "        past, ids = past + length, chosen[:, None].astype(np.int64)",
        "    return np.stack(tokens, 1)",
        "",
        "",
        "def eager_greedy(prompt, new_tokens):",
        "    ids, cache, past, tokens = torch.from_numpy(prompt), None, 0, []",
        "    with torch.no_grad():",
        "        for _ in range(new_tokens):",
        "            batch, length = ids.shape",
        "            out = hf_model(",
        "                input_ids=ids, attention_mask=torch.ones(batch, past + length, dtype=torch.int64),",
        "                position_ids=torch.arange(past, past + length).expand(batch, length),",
        "                cache=cache, use_cache=True,",
        "            )",
        "            cache, past = out.cache, past + length",
        "            ids = out.logits[:, -1].argmax(-1, keepdim=True)",
        "            tokens.append(ids[:, 0].numpy())",
        "    return np.stack(tokens, 1)",
        "",
        "",
        f"for seed, (batch, length) in enumerate({list(prompts)!r}):",
        "    prompt = np.random.default_rng(seed).integers(0, config.vocab_size, size=(batch, length), dtype=np.int64)",
        f"    eager_tokens = eager_greedy(prompt, {int(new_tokens)})",
        f"    onnx_tokens = onnx_greedy(prompt, {int(new_tokens)})",
        "    same = bool((eager_tokens == onnx_tokens).all())",
        "    print(f'batch {batch}, {length} prompt tokens:', 'same tokens' if same else 'tokens differ')",
        "    print('  PyTorch     ', eager_tokens.tolist())",
        "    print('  ONNX Runtime', onnx_tokens.tolist())",
    ]
