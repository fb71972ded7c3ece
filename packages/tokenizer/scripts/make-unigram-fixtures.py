"""Makes the SentencePiece fixtures of the `Precompiled` normalizer and Unigram tests, with Google's
`sentencepiece` and transformers' converter:

- `test/fixtures/unigram-custom-rules.tokenizer.json`: a small Unigram tokenizer (ALBERT-style
  conversion) whose `precompiled_charsmap` comes from a handful of custom normalization rules;
- `test/fixtures/nmt-nfkc-charsmap.bin.gz`: the `nmt_nfkc` charsmap of real SentencePiece models
  (T5, ALBERT, XLM-R…), gzipped.

    /tmp/venv-tok/bin/pip install transformers sentencepiece protobuf
    /tmp/venv-tok/bin/python packages/tokenizer/scripts/make-unigram-fixtures.py
"""

import base64
import gzip
import json
import pathlib
import random
import tempfile

import sentencepiece
from transformers import AlbertTokenizer
from transformers.convert_slow_tokenizer import AlbertConverter

fixtures = pathlib.Path(__file__).resolve().parent.parent / "test" / "fixtures"
random.seed(0)
words = "the quick brown fox jumps over the lazy dog café naïve ﬁnance ＡＢＣ ① Ⅻ 한국어 カタカナ ｶﾀｶﾅ".split()
rules = ["FF21\t41", "FB01\t66 69", "2460\t31", "65 301\tE9", "3000\t20", "41 42 43\t78 79 7A"]

with tempfile.TemporaryDirectory() as directory:
    work = pathlib.Path(directory)
    (work / "corpus.txt").write_text("\n".join(" ".join(random.choice(words) for _ in range(12)) for _ in range(2000)), encoding="utf-8")
    (work / "rules.tsv").write_text("\n".join(rules) + "\n", encoding="utf-8")
    common = dict(input=str(work / "corpus.txt"), vocab_size=60, model_type="unigram", character_coverage=1.0, num_threads=1)
    sentencepiece.SentencePieceTrainer.train(model_prefix=str(work / "custom"), normalization_rule_tsv=str(work / "rules.tsv"), **common)
    sentencepiece.SentencePieceTrainer.train(model_prefix=str(work / "nfkc"), normalization_rule_name="nmt_nfkc", **common)

    custom = AlbertConverter(AlbertTokenizer(vocab_file=str(work / "custom.model"))).converted()
    custom.save(str(fixtures / "unigram-custom-rules.tokenizer.json"))

    nfkc = json.loads(AlbertConverter(AlbertTokenizer(vocab_file=str(work / "nfkc.model"))).converted().to_str())
    charsmap = next(item for item in nfkc["normalizer"]["normalizers"] if item["type"] == "Precompiled")["precompiled_charsmap"]
    (fixtures / "nmt-nfkc-charsmap.bin.gz").write_bytes(gzip.compress(base64.b64decode(charsmap), compresslevel=9, mtime=0))

print("written:", *(path.name for path in sorted(fixtures.glob("unigram-custom-rules*")) + sorted(fixtures.glob("nmt-nfkc*"))))
