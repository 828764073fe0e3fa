"""`op: tokenize` against Hugging Face's tokenizers itself (the Python
package, built apart from the Rust crate fex links): the same tokenizer.json
(tests/fixtures/tokenizer/bpe.json) must give the same token ids for random
text, Chinese, emoji, runs of spaces and strings that are not UTF-8 (read by
both with U+FFFD for each bad sequence)."""

import os
import random

import pytest

import fex
from conftest import random_texts, string_rows

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BPE = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "bpe.json")
MODEL = """name: t
features:
  - {name: title, kind: string, output: false}
  - {name: tokens, op: tokenize, input: title, file: bpe.json}
"""

PIECES = ["red", "running", "shoes", "水", "红色", "运动鞋", "😀", " ", "  ", "\t", ",", "'s", "M", "750ml", "é", "ü"]


def test_token_ids_are_those_of_huggingface_tokenizers(protos):
    tokenizers = pytest.importorskip("tokenizers")
    example = protos["example"]
    reference = tokenizers.Tokenizer.from_file(BPE)
    with open(BPE, "rb") as f:
        plan = fex.Plan.from_yaml(MODEL, files={"bpe.json": f.read()})
    rng = random.Random(36)
    for _ in range(5):
        rows = random_texts(rng, 200, PIECES)
        for text, got in zip(rows, string_rows(plan, example, rows)):
            want = reference.encode(text.decode("utf-8", errors="replace"), add_special_tokens=False).ids
            assert got == want, (text, got, want)
