// make_goldens.mjs: the expected renderings of testdata/chat's templates.
//
// Takes the chat templates of real instruct models from the npm packages
// named in package.json (models/tokenizer_config.json of each), writes them
// to templates/NAME.json (chat_template, bos_token, eos_token: a
// tokenizer_config.json that sipack template reads), adds the hand-written
// tiny_template.jinja of the test model and templates/llama3_2.json (kept as
// it is: no npm package ships a Llama 3.x template that takes tools), and
// renders every conversation of conversations.json with and without the
// generation prompt using @huggingface/jinja, an independent Jinja
// implementation (transformers.js). A conversation's tools, when it has any,
// are passed as the template's tools, as transformers passes them; messages
// go as they are written (tool_calls, tool_call_id, name). The clock is
// fixed at 2024-07-26 09:05:07 so that templates that print today's date
// (strftime_now) render the same on any day; the Go test fixes its clock to
// the same time.
// Renderings, or the error a template raises, go to goldens.json.
//
//   cd testdata/chat && npm ci && node make_goldens.mjs
//
// Go tests only read the outputs; nothing here runs in CI.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const packages = ["llama3", "llama3_1", "qwen3", "gemma3"];

function tokenText(t) {
  if (t === null || t === undefined) return null;
  return typeof t === "string" ? t : t.content;
}

mkdirSync("templates", { recursive: true });
const templates = {};
for (const p of packages) {
  const pkg = `@lenml/tokenizer-${p}`;
  const dir = `node_modules/${pkg}`;
  const cfg = JSON.parse(readFileSync(`${dir}/models/tokenizer_config.json`, "utf8"));
  const version = JSON.parse(readFileSync(`${dir}/package.json`, "utf8")).version;
  const t = {
    source: `npm ${pkg}@${version} models/tokenizer_config.json`,
    bos_token: tokenText(cfg.bos_token),
    eos_token: tokenText(cfg.eos_token),
    chat_template: cfg.chat_template,
  };
  templates[p] = t;
  writeFileSync(`templates/${p}.json`, JSON.stringify(t, null, 2) + "\n");
}
templates.llama3_2 = JSON.parse(readFileSync("templates/llama3_2.json", "utf8"));
templates.tiny = {
  source: "testdata/chat/tiny_template.jinja",
  bos_token: "<|begin_of_text|>",
  eos_token: "<|end_of_text|>",
  chat_template: readFileSync("tiny_template.jinja", "utf8"),
};

// Today is 2024-07-26 09:05:07 here, for the templates' strftime_now.
const RealDate = Date;
globalThis.Date = class extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(2024, 6, 26, 9, 5, 7);
    else super(...args);
  }
  static now() {
    return new RealDate(2024, 6, 26, 9, 5, 7).getTime();
  }
};

const conversations = JSON.parse(readFileSync("conversations.json", "utf8"));
const cases = [];
const counts = {};
for (const [name, t] of Object.entries(templates)) {
  const tmpl = new Template(t.chat_template);
  for (const conv of conversations) {
    for (const agp of [true, false]) {
      const c = { template: name, conversation: conv.name, add_generation_prompt: agp };
      const vars = {
        messages: conv.messages,
        add_generation_prompt: agp,
        bos_token: t.bos_token ?? "",
        eos_token: t.eos_token ?? "",
      };
      if (conv.tools !== undefined) vars.tools = conv.tools;
      try {
        c.output = tmpl.render(vars);
      } catch (e) {
        c.error = String(e.message ?? e);
      }
      cases.push(c);
      counts[name] = (counts[name] ?? 0) + 1;
    }
  }
}
writeFileSync("goldens.json", JSON.stringify({ renderer: "@huggingface/jinja@" + JSON.parse(readFileSync("node_modules/@huggingface/jinja/package.json", "utf8")).version, cases }, null, 1) + "\n");
console.log(counts);
