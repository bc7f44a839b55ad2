"""all-MiniLM-L6-v2's forward pass as an ONNX graph built from its safetensors weights, run by ONNX Runtime.

Why not numpy: a question is a batch of one, and numpy's forward pass took about 100 calls, each taking the GIL
back; on a busy event loop every call waited its turn (8 ms idle became 24 ms p50 in a reply). ONNX Runtime runs
the whole graph in one call without the GIL, in about 3 ms, with the same float32 arithmetic (the vectors agree
with the numpy reference to 1e-5: tests/llm/test_minilm_graph.py), so vectors stored before stay comparable.
No exported model file is needed: the graph is the textbook BERT encoder, written here node by node. The
weights go to ONNX Runtime as in-memory external initializers, which it copies once; the serialized graph itself
is 100 kB, so loading peaks near the weights' size instead of three copies of them.

`build(…, int8=True)`, what the bot runs: the 36 weight matrices are int8 with a scale per output column, and the
activations entering them are quantized per call (ONNX Runtime's dynamic quantization, the pattern its quantizer
writes: DynamicQuantizeLinear → MatMulInteger → scale). A question costs 1.5–2.6 ms instead of 3.5–6 (the float
weights, 42 MB, no longer fit in this machine's caches between questions; the int8 ones are a quarter of that),
and its vector keeps a cosine of 0.96–0.996 with the float one (tests/llm/test_minilm_graph.py checks ≥ 0.96).
Vectors of the two are not mixed: they are stored under different model names (bot/llm/local_embedder.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

HIDDEN = 384
HEADS = 12
LAYERS = 6
WEIGHT_MAX = 63  # int8 weights in 7 bits: see `_Builder.linear`
SMALL = 128  # bytes: smaller constants stay inside the graph (shape inference reads them)
INPUTS = ("ids", "positions", "additive")  # token ids (batch, width), 0..width-1, the padding mask as -1e9 / 0
OUTPUT = "tokens"  # (batch, width, HIDDEN): the last layer's token states; pooling is the caller's


class _Builder:
    def __init__(self, weights: Mapping[str, np.ndarray], *, int8: bool) -> None:
        self.w = weights
        self.int8 = int8
        self.nodes: list[object] = []
        self.initializers: dict[str, object] = {}
        self.external: dict[str, np.ndarray] = {}
        self._quantized: dict[str, tuple[str, str, str]] = {}  # an activation's int8 form, made once for q, k and v

    def const(self, name: str, value: np.ndarray | np.floating) -> str:
        from onnx import TensorProto, helper, numpy_helper

        if name in self.initializers:
            return name
        value = np.ascontiguousarray(value)
        if value.nbytes < SMALL:
            self.initializers[name] = numpy_helper.from_array(value, name)
            return name
        tensor = TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(value.dtype), dims=value.shape)
        tensor.data_location = TensorProto.EXTERNAL
        tensor.external_data.add(key="location", value="in-memory")  # replaced before loading: never read
        self.initializers[name] = tensor
        self.external[name] = value
        return name

    def node(self, op: str, inputs: list[str], **attributes: Any) -> str:
        return self.nodes_out(op, inputs, 1, **attributes)[0]

    def nodes_out(self, op: str, inputs: list[str], outputs: int, **attributes: Any) -> list[str]:
        from onnx import helper

        out = [
            f"{op.lower()}_{len(self.nodes)}_{i}" if outputs > 1 else f"{op.lower()}_{len(self.nodes)}"
            for i in range(outputs)
        ]
        self.nodes.append(helper.make_node(op, inputs, out, **attributes))
        return out

    def linear(self, x: str, key: str) -> str:  # torch's Linear: x @ W.T + b
        weight = self.w[key + ".weight"].T.astype(np.float32)  # (in, out)
        bias = self.const(key + ".b", self.w[key + ".bias"])
        if not self.int8:
            return self.node("Add", [self.node("MatMul", [x, self.const(key + ".wt", weight)]), bias])
        # Symmetric per output column, in 7 bits (as the quantizer's reduce_range): x86 CPUs without VNNI multiply
        # uint8 × int8 pairs into 16-bit sums (vpmaddubsw), which 8-bit weights can saturate (255 × 127 × 2 >
        # 32,767), so vectors would differ by CPU. The activation is quantized per call (uint8, its own range).
        column_scale = np.maximum(np.abs(weight).max(axis=0), 1e-12) / WEIGHT_MAX
        q8 = np.clip(np.rint(weight / column_scale), -WEIGHT_MAX, WEIGHT_MAX).astype(np.int8)
        if x not in self._quantized:
            self._quantized[x] = tuple(self.nodes_out("DynamicQuantizeLinear", [x], 3))  # type: ignore[assignment]
        xq, x_scale, x_zero = self._quantized[x]
        zeros = self.const(key + ".wz", np.zeros(weight.shape[1], np.int8))
        product = self.node("MatMulInteger", [xq, self.const(key + ".wq", q8), x_zero, zeros])
        scale = self.node("Mul", [x_scale, self.const(key + ".ws", column_scale.astype(np.float32))])
        return self.node("Add", [self.node("Mul", [self.node("Cast", [product], to=1), scale]), bias])  # to=FLOAT

    def layer_norm(self, x: str, key: str) -> str:
        scale, bias = self.const(key + ".w", self.w[key + ".weight"]), self.const(key + ".b", self.w[key + ".bias"])
        return self.node("LayerNormalization", [x, scale, bias], epsilon=1e-12, axis=-1)

    def gelu(self, x: str) -> str:  # BERT's exact GELU: x/2 · (1 + erf(x/√2))
        erf = self.node("Erf", [self.node("Mul", [x, self.const("inv_sqrt2", np.float32(1 / math.sqrt(2)))])])
        one_plus = self.node("Add", [erf, self.const("one", np.float32(1.0))])
        return self.node("Mul", [self.node("Mul", [x, one_plus]), self.const("half", np.float32(0.5))])


def build(weights: Mapping[str, np.ndarray], *, int8: bool = True) -> tuple[bytes, dict[str, np.ndarray]]:
    """The serialized ONNX model (opset 17) for BERT weights keyed as sentence-transformers saves them, and the
    weights it refers to by name (`session` hands them over); `int8`: its matrices quantized (see above)."""
    from onnx import TensorProto, helper

    b = _Builder(weights, int8=int8)
    w = weights
    x = b.node("Gather", [b.const("word", w["embeddings.word_embeddings.weight"]), "ids"])
    position = b.const("position", w["embeddings.position_embeddings.weight"])
    x = b.node("Add", [x, b.node("Gather", [position, "positions"])])
    x = b.node("Add", [x, b.const("token_type", w["embeddings.token_type_embeddings.weight"][0])])
    x = b.layer_norm(x, "embeddings.LayerNorm")
    head = HIDDEN // HEADS
    to_heads = b.const("to_heads", np.array([0, 0, HEADS, head], np.int64))
    to_hidden = b.const("to_hidden", np.array([0, 0, HIDDEN], np.int64))
    scale = b.const("scale", np.float32(1 / math.sqrt(head)))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."

        def heads(t: str, perm: list[int]) -> str:
            return b.node("Transpose", [b.node("Reshape", [t, to_heads])], perm=perm)

        q = heads(b.node("Mul", [b.linear(x, p + "attention.self.query"), scale]), [0, 2, 1, 3])
        k = heads(b.linear(x, p + "attention.self.key"), [0, 2, 3, 1])  # already transposed for q @ k
        v = heads(b.linear(x, p + "attention.self.value"), [0, 2, 1, 3])
        scores = b.node("Softmax", [b.node("Add", [b.node("MatMul", [q, k]), "additive"])], axis=-1)
        context = b.node("Transpose", [b.node("MatMul", [scores, v])], perm=[0, 2, 1, 3])
        context = b.node("Reshape", [context, to_hidden])
        x = b.layer_norm(
            b.node("Add", [x, b.linear(context, p + "attention.output.dense")]), p + "attention.output.LayerNorm"
        )
        hidden = b.gelu(b.linear(x, p + "intermediate.dense"))
        x = b.layer_norm(b.node("Add", [x, b.linear(hidden, p + "output.dense")]), p + "output.LayerNorm")
    b.nodes.append(helper.make_node("Identity", [x], [OUTPUT]))
    graph = helper.make_graph(
        b.nodes,  # type: ignore[arg-type]
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "width"]),
            helper.make_tensor_value_info("positions", TensorProto.INT64, ["width"]),
            helper.make_tensor_value_info("additive", TensorProto.FLOAT, ["batch", 1, 1, "width"]),
        ],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", "width", HIDDEN])],
        list(b.initializers.values()),  # type: ignore[arg-type]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # the newest ONNX Runtime 1.15+ reads, so the locked runtime never refuses the file
    return bytes(model.SerializeToString()), b.external


def session(model: bytes, external: Mapping[str, np.ndarray]) -> object:
    """An ONNX Runtime session on one thread, run in the caller's thread (no pool whose threads spin); it holds
    its own copy of `external`, which the caller may drop."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_external_initializers(list(external), [ort.OrtValue.ortvalue_from_numpy(v) for v in external.values()])
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    # No memory arena: it grows to the largest batch ever run and never shrinks (64 long messages of a backlog
    # batch left the process 900 MB bigger for good); without it a question takes the same 3 ms.
    options.enable_cpu_mem_arena = False
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
