"""`op: tokenize` with `tokenizer_type: sentencepiece` against Google's
SentencePiece itself (the Python package, 0.2.1, the version the Rust crate
fex links vendors, built apart from it): the same `.model` must give the
same ids (`encode`, EncodeAsIds: no BOS or EOS) for random text: English,
Chinese, full-width letters, emoji the models lack, runs and edges of
spaces, tabs, and strings that are not UTF-8 (read by both with U+FFFD for
each bad sequence). The models are the fixtures (make_spm.py) and models
trained here with other options: no dummy prefix, whitespace kept, case
folding, `char` and `word` types, user-defined symbols."""

import io
import os
import random

import pytest

import fex
from conftest import random_texts, string_rows, tokenizer_titles

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
MODEL = """name: t
features:
  - {name: title, kind: string, output: false}
  - {name: tokens, op: tokenize, input: title, tokenizer_type: sentencepiece, file: m.model}
"""


PIECES = ["red", "Running", "shoes", "水", "红色", "运动鞋", "😀", "Ｒｅｄ", "①", " ", "  ", "\t", ",", "'s", "M", "750ml", "é", "ü", "<sep>"]


def trained(**options):
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(tokenizer_titles() * 10), model_writer=model, num_threads=1, minloglevel=2, **options
    )
    return model.getvalue()


def models():
    for name in ["unigram.model", "bpe.model"]:
        with open(os.path.join(FIXTURES, name), "rb") as f:
            yield name, f.read()
    yield "no dummy prefix, spaces kept", trained(
        vocab_size=60, hard_vocab_limit=False, add_dummy_prefix=False, remove_extra_whitespaces=False
    )
    yield "nfkc_cf, user symbols", trained(
        vocab_size=60, hard_vocab_limit=False, normalization_rule_name="nfkc_cf", user_defined_symbols=["<sep>"]
    )
    yield "char", trained(model_type="char", vocab_size=50, hard_vocab_limit=False)
    yield "word", trained(model_type="word", vocab_size=30, hard_vocab_limit=False)


@pytest.mark.parametrize("name,model", list(models()), ids=lambda x: x if isinstance(x, str) else "")
def test_token_ids_are_those_of_sentencepiece(protos, name, model):
    spm = pytest.importorskip("sentencepiece")
    assert spm.__version__ == "0.2.1", "the version the sentencepiece crate vendors"
    example = protos["example"]
    reference = spm.SentencePieceProcessor(model_proto=model)
    plan = fex.Plan.from_yaml(MODEL, files={"m.model": model})
    rng = random.Random(36)
    for _ in range(5):
        rows = random_texts(rng, 200, PIECES)
        for text, got in zip(rows, string_rows(plan, example, rows)):
            want = reference.encode(text.decode("utf-8", errors="replace"))
            assert got == want, (name, text, got, want)


def test_a_file_of_the_wrong_type_is_refused_with_a_hint():
    with open(os.path.join(FIXTURES, "bpe.json"), "rb") as f:
        json = f.read()
    with open(os.path.join(FIXTURES, "unigram.model"), "rb") as f:
        model = f.read()
    with pytest.raises(Exception, match=r"is not a sentencepiece model.*needs tokenizer_type: bpe"):
        fex.Plan.from_yaml(MODEL, files={"m.model": json})
    bpe = MODEL.replace("tokenizer_type: sentencepiece", "tokenizer_type: bpe")
    with pytest.raises(Exception, match=r"is not a tokenizer.json.*needs tokenizer_type: sentencepiece"):
        fex.Plan.from_yaml(bpe, files={"m.model": model})
    with pytest.raises(Exception, match=r"unknown tokenizer type \"wordpiece\""):
        fex.Plan.from_yaml(MODEL.replace("sentencepiece", "wordpiece"), files={"m.model": model})
