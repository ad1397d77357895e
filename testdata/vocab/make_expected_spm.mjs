// Regenerates expected_spm.jsonl: token ids for the SentencePiece-style
// vocabulary spm.tokenizer.json.gz, computed by HuggingFace's tokenizers
// library itself (its Node binding), in the file's own form ("prepend": a
// Prepend("▁") + Replace normaliser, as Llama 2's and Mistral 7B's files)
// and in the Metaspace pre-tokenizer forms newer files use (the normaliser
// removed; prepend_scheme first/always/never, split or not). The Go test
// makes the same variants. Run by hand, never at test time:
//   cd /tmp && npm install --ignore-scripts @anush008/tokenizers@0.6.0
//   NODE_PATH=/tmp/node_modules node testdata/vocab/make_expected_spm.mjs > testdata/vocab/expected_spm.jsonl
import { createRequire } from "module";
import fs from "fs";
import zlib from "zlib";
const require = createRequire(process.env.NODE_PATH + "/");
const { Tokenizer } = require("@anush008/tokenizers");

const here = new URL(".", import.meta.url).pathname;
const base = JSON.parse(zlib.gunzipSync(fs.readFileSync(here + "spm.tokenizer.json.gz")).toString("utf8"));

// The same texts as make_expected.mjs, then what a SentencePiece-style
// tokenizer treats specially: spaces at the ends and in runs, added tokens
// between words, a character outside the vocabulary, a long word.
const mjs = fs.readFileSync(here + "make_expected.mjs", "utf8");
const texts = eval(mjs.slice(mjs.indexOf("const texts = [") + 14, mjs.indexOf("];\n") + 1));
texts.push(
  "<s>Hi</s> there",
  "a<s>b",
  "Hello<s> world",
  " Hello  world",
  "  ",
  " x ",
  "\n\n\n",
  "ab\u00a0cd \u3000 e",
  "Cherokee ᏣᎳᎩ and Tifinagh ⵜⴰⵎⴰⵣⵉⵖⵜ",
  "x".repeat(3000) + " y",
);

function variant(name) {
  const t = structuredClone(base);
  if (name === "prepend") return t;
  const [, scheme, split] = name.match(/^metaspace-(\w+?)(-split)?$/);
  const m = { type: "Metaspace", replacement: "\u2581", prepend_scheme: scheme, split: !!split };
  t.normalizer = null;
  t.pre_tokenizer = m;
  t.decoder = m;
  return t;
}

for (const name of ["prepend", "metaspace-first", "metaspace-always", "metaspace-never", "metaspace-first-split"]) {
  const tk = Tokenizer.fromString(JSON.stringify(variant(name)));
  for (const text of texts) {
    const ids = Array.from((await tk.encode(text, null, { addSpecialTokens: false })).getIds());
    const with_special = Array.from((await tk.encode(text, null, { addSpecialTokens: true })).getIds());
    console.log(JSON.stringify({ variant: name, text, ids, with_special }));
  }
}
