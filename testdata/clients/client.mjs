// Drives one running sirun serve with the official npm clients, ollama's
// and OpenAI's; run by server/clients_test.go as:
//   node client.mjs http://127.0.0.1:PORT
// (the server serves the tiny test model as "tiny", with a chat template).
// Prints "ok <check>" per check passed; on the first failure prints
// "FAIL <check>: why" and exits 1.
import { Ollama } from 'ollama'
import OpenAI from 'openai'
import assert from 'node:assert/strict'

const url = process.argv[2]
if (!url) {
  console.error('usage: node client.mjs http://HOST:PORT')
  process.exit(2)
}

// check runs one named check; fn returns what to print after "ok name".
async function check(name, fn) {
  let said
  try {
    said = await fn()
  } catch (err) {
    console.log(`FAIL ${name}: ${err?.stack ?? err}`)
    process.exit(1)
  }
  console.log(['ok', name, ...(said === undefined ? [] : [said])].join(' '))
}

// ollama's client.

const ollama = new Ollama({ host: url })
const options = { temperature: 0, num_predict: 16 }
const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Who made the heaven and the earth?' }]

let ollamaChat
await check('ollama chat', async () => {
  const chat = await ollama.chat({ model: 'tiny:latest', messages, options })
  assert.equal(chat.message.role, 'assistant')
  assert.ok(chat.message.content.length > 0, 'empty chat answer')
  assert.equal(chat.done, true)
  assert.ok(['stop', 'length'].includes(chat.done_reason), chat.done_reason)
  assert.ok(chat.eval_count >= 1 && chat.eval_count <= 16 && chat.prompt_eval_count > 0 && chat.total_duration > 0)
  ollamaChat = chat
  return JSON.stringify(chat.message.content)
})

await check('ollama chat stream', async () => {
  let streamed = '', parts = 0, last
  for await (const part of await ollama.chat({ model: 'tiny', messages, options, stream: true })) {
    streamed += part.message.content
    parts++
    last = part
  }
  assert.equal(streamed, ollamaChat.message.content)
  assert.ok(parts >= 2 && last.done && last.eval_count === ollamaChat.eval_count, `${parts} parts, last ${JSON.stringify(last)}`)
  return `${parts} parts`
})

await check('ollama generate', async () => {
  const gen = await ollama.generate({ model: 'tiny', prompt: 'In the beginning', raw: true, options })
  assert.ok(gen.response.length > 0 && gen.done)
  let streamed = '', last
  for await (const part of await ollama.generate({ model: 'tiny', prompt: 'In the beginning', raw: true, options, stream: true })) {
    streamed += part.response
    last = part
  }
  assert.equal(streamed, gen.response)
  assert.ok(last.done && ['stop', 'length'].includes(last.done_reason))
  return JSON.stringify(gen.response)
})

let list
await check('ollama list', async () => {
  list = await ollama.list()
  assert.equal(list.models.length, 1)
  assert.equal(list.models[0].name, 'tiny:latest')
  assert.equal(list.models[0].details.family, 'llama')
  assert.ok(list.models[0].size > 0 && list.models[0].digest.length === 64)
  return `${list.models[0].name} ${list.models[0].details.parameter_size}`
})

await check('ollama show', async () => {
  const show = await ollama.show({ model: list.models[0].name })
  assert.equal(show.model_info['general.architecture'], 'llama')
  assert.ok(show.template.length > 0 && show.parameters.includes('num_ctx'))
})

await check('ollama version', async () => {
  const version = await ollama.version()
  assert.match(version.version, /^\d+\.\d+\.\d+$/)
  return version.version
})

await check('ollama ps', async () => {
  const ps = await ollama.ps()
  assert.equal(ps.models.length, 1)
  assert.equal(ps.models[0].name, 'tiny:latest')
})

await check('ollama errors', async () => {
  await assert.rejects(ollama.chat({ model: 'nope', messages }), (err) => {
    assert.equal(err.name, 'ResponseError')
    assert.equal(err.status_code, 404)
    assert.match(err.message, /^model 'nope' not found/)
    return true
  })
  await assert.rejects(ollama.chat({ model: 'tiny', messages, options: { num_ctx: 100000 } }), (err) => {
    assert.equal(err.status_code, 400)
    assert.match(err.message, /options\.num_ctx/)
    return true
  })
})

// OpenAI's client, on the same server.

const openai = new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60_000 })
const greedy = { model: 'tiny', messages, temperature: 0, max_tokens: 16 }

// usageOK checks a usage object's counts.
function usageOK(u, what) {
  assert.ok(u, `${what}: no usage`)
  assert.ok(u.prompt_tokens > 0 && u.completion_tokens >= 1 && u.total_tokens === u.prompt_tokens + u.completion_tokens,
    `${what}: usage ${JSON.stringify(u)}`)
}

// readChatStream reads a chat stream: its text, finish reasons, logprobs entries,
// chunk count and usage; the first chunk must bring the assistant's role.
async function readChatStream(stream) {
  const got = { text: '', finishes: [], logprobs: [], chunks: 0, usage: undefined }
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk')
    assert.equal(chunk.model, 'tiny')
    if (chunk.usage) {
      assert.equal(got.usage, undefined, 'two usage chunks')
      assert.deepEqual(chunk.choices, [], 'the usage chunk has choices')
      got.usage = chunk.usage
      continue
    }
    assert.equal(got.usage, undefined, 'a chunk after the usage chunk')
    assert.equal(chunk.choices.length, 1)
    const c = chunk.choices[0]
    if (got.chunks++ === 0) {
      assert.equal(c.delta.role, 'assistant', `first chunk ${JSON.stringify(chunk)}`)
    }
    got.text += c.delta.content ?? ''
    if (c.finish_reason) {
      got.finishes.push(c.finish_reason)
    }
    got.logprobs.push(...(c.logprobs?.content ?? []))
  }
  return got
}

await check('openai models', async () => {
  const page = await openai.models.list()
  assert.equal(page.data.length, 1)
  const m = page.data[0]
  assert.equal(m.id, 'tiny')
  assert.equal(m.object, 'model')
  assert.ok(typeof m.owned_by === 'string' && m.created > 0, JSON.stringify(m))
  const ids = []
  for await (const model of openai.models.list()) {
    ids.push(model.id)
  }
  assert.deepEqual(ids, ['tiny'])
  const one = await openai.models.retrieve('tiny')
  assert.deepEqual(one, m)
  return m.id
})

let plain
await check('openai chat', async () => {
  plain = await openai.chat.completions.create(greedy)
  assert.equal(plain.object, 'chat.completion')
  assert.equal(plain.model, 'tiny')
  assert.equal(plain.choices.length, 1)
  const c = plain.choices[0]
  assert.equal(c.message.role, 'assistant')
  assert.ok(c.message.content.length > 0, 'empty answer')
  assert.ok(['stop', 'length'].includes(c.finish_reason), c.finish_reason)
  usageOK(plain.usage, 'chat')
  assert.ok(plain.usage.completion_tokens <= 16)
  // Both APIs render the same template and decode greedily (with OpenAI's
  // defaults: ollama's repeat_penalty is 1.1).
  const same = await ollama.chat({ model: 'tiny', messages, options: { ...options, repeat_penalty: 1 } })
  assert.equal(c.message.content, same.message.content, "the ollama API's answer at repeat_penalty 1")
  assert.equal(plain.usage.completion_tokens, same.eval_count)
  assert.equal(plain.usage.prompt_tokens, same.prompt_eval_count)
  return JSON.stringify(c.message.content)
})

await check('openai chat stream', async () => {
  const got = await readChatStream(await openai.chat.completions.create({ ...greedy, stream: true, stream_options: { include_usage: true } }))
  assert.equal(got.text, plain.choices[0].message.content, 'the text assembled from the deltas')
  assert.deepEqual(got.finishes, [plain.choices[0].finish_reason], 'finish reasons')
  assert.ok(got.chunks >= 3, `${got.chunks} chunks`)
  usageOK(got.usage, 'stream')
  assert.equal(got.usage.completion_tokens, plain.usage.completion_tokens)
  assert.equal(got.usage.prompt_tokens, plain.usage.prompt_tokens)
  return `${got.chunks} chunks`
})

await check('openai chat logprobs', async () => {
  const top = 3
  const res = await openai.chat.completions.create({ ...greedy, logprobs: true, top_logprobs: top })
  assert.equal(res.choices[0].message.content, plain.choices[0].message.content)
  const entries = res.choices[0].logprobs?.content
  assert.ok(Array.isArray(entries), `logprobs ${JSON.stringify(res.choices[0].logprobs)}`)
  assert.equal(entries.length, res.usage.completion_tokens, 'one entry per generated token')
  for (const e of entries) {
    assert.ok(typeof e.token === 'string' && e.logprob <= 0 && Array.isArray(e.bytes), JSON.stringify(e))
    assert.ok(e.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256), JSON.stringify(e))
    if (!e.token.includes('\uFFFD')) assert.equal(Buffer.from(e.bytes).toString('utf8'), e.token)
    assert.equal(e.top_logprobs.length, top, JSON.stringify(e))
    for (let i = 1; i < top; i++) {
      assert.ok(e.top_logprobs[i - 1].logprob >= e.top_logprobs[i].logprob, `top_logprobs out of order: ${JSON.stringify(e)}`)
    }
    // Greedy: the token taken is the likeliest.
    assert.equal(e.token, e.top_logprobs[0].token, JSON.stringify(e))
    assert.ok(Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-4, JSON.stringify(e))
  }
  const got = await readChatStream(await openai.chat.completions.create({
    ...greedy, logprobs: true, top_logprobs: top, stream: true, stream_options: { include_usage: true },
  }))
  assert.equal(got.text, plain.choices[0].message.content)
  assert.equal(got.logprobs.length, got.usage.completion_tokens, 'streamed: one entry per generated token')
  assert.deepEqual(got.logprobs.map((e) => e.token), entries.map((e) => e.token), 'streamed tokens')
  got.logprobs.forEach((e, i) => assert.ok(Math.abs(e.logprob - entries[i].logprob) < 1e-4, `token ${i}: ${e.logprob} vs ${entries[i].logprob}`))
  return `${entries.length} tokens, plain and streamed`
})

await check('openai completions', async () => {
  const params = { model: 'tiny', prompt: 'In the beginning', temperature: 0, max_tokens: 16 }
  const res = await openai.completions.create(params)
  assert.equal(res.object, 'text_completion')
  assert.equal(res.choices.length, 1)
  const text = res.choices[0].text
  assert.ok(['stop', 'length'].includes(res.choices[0].finish_reason))
  usageOK(res.usage, 'completion')
  assert.ok(text.length >= 8, `answer ${JSON.stringify(text)} too short to cut at a stop string`)
  const same = await ollama.generate({ model: 'tiny', prompt: params.prompt, raw: true, options: { ...options, repeat_penalty: 1 } })
  assert.equal(text, same.response, "the ollama API's raw generate at repeat_penalty 1")

  // The legacy logprobs: parallel lists, one entry per generated token.
  const lp = (await openai.completions.create({ ...params, logprobs: 2 })).choices[0].logprobs
  assert.ok(lp && lp.tokens.length === res.usage.completion_tokens, `logprobs ${JSON.stringify(lp)}`)
  assert.ok(lp.token_logprobs.length === lp.tokens.length && lp.top_logprobs.length === lp.tokens.length && lp.text_offset.length === lp.tokens.length)
  lp.tokens.forEach((t, i) => {
    assert.ok(lp.token_logprobs[i] <= 0 && Object.keys(lp.top_logprobs[i]).length >= 1, `token ${i}: ${JSON.stringify(lp)}`)
    assert.equal(lp.text_offset[i], i === 0 ? 0 : lp.text_offset[i - 1] + lp.tokens[i - 1].length, `text_offset ${i}`)
  })
  if (res.choices[0].finish_reason === 'length') assert.equal(lp.tokens.join(''), text, 'the tokens joined')

  let streamed = '', finishes = []
  for await (const chunk of await openai.completions.create({ ...params, stream: true })) {
    streamed += chunk.choices[0]?.text ?? ''
    if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason)
  }
  assert.equal(streamed, text, 'streamed text')
  assert.deepEqual(finishes, [res.choices[0].finish_reason])

  // A stop string from the middle of the answer: the text ends before its
  // first occurrence, plain and streamed.
  const mid = Math.floor(text.length / 2)
  const stop = text.slice(mid, mid + 3)
  const want = text.slice(0, text.indexOf(stop))
  const cut = await openai.completions.create({ ...params, stop })
  assert.equal(cut.choices[0].text, want, `stop ${JSON.stringify(stop)}`)
  assert.equal(cut.choices[0].finish_reason, 'stop')
  streamed = ''
  finishes = []
  for await (const chunk of await openai.completions.create({ ...params, stop: [stop], stream: true })) {
    streamed += chunk.choices[0]?.text ?? ''
    if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason)
  }
  assert.equal(streamed, want, `streamed, stop ${JSON.stringify(stop)}`)
  assert.deepEqual(finishes, ['stop'])
  return `${JSON.stringify(text)}, stop ${JSON.stringify(stop)}`
})

await check('openai json_schema', async () => {
  const schema = {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 12 },
      book: { type: 'string', maxLength: 20 },
      chapter: { type: 'integer' },
      canonical: { type: 'boolean' },
    },
    required: ['name', 'chapter', 'canonical'],
    additionalProperties: false,
  }
  const types = { name: 'string', chapter: 'number', canonical: 'boolean' }
  let stopped = 0, first
  const finishes = []
  for (const seed of [1, 2, 3, 4, 5]) {
    const res = await openai.chat.completions.create({
      model: 'tiny', temperature: 1, seed, max_tokens: 96,
      messages: [{ role: 'user', content: 'Name a prophet, as JSON.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'prophet', strict: true, schema } },
    })
    const c = res.choices[0]
    finishes.push(c.finish_reason)
    if (c.finish_reason !== 'stop') {
      assert.equal(c.finish_reason, 'length', `seed ${seed}`)
      continue
    }
    stopped++
    first ??= c.message.content
    let v
    assert.doesNotThrow(() => { v = JSON.parse(c.message.content) }, `seed ${seed}: ${c.message.content}`)
    assert.ok(v && typeof v === 'object' && !Array.isArray(v), `seed ${seed}: ${c.message.content}`)
    for (const [k, t] of Object.entries(types)) {
      assert.equal(typeof v[k], t, `seed ${seed}: ${k} in ${c.message.content}`)
    }
    assert.ok(Number.isInteger(v.chapter), `seed ${seed}: ${c.message.content}`)
    assert.ok([...v.name].length <= 12 && (v.book === undefined || [...v.book].length <= 20), `seed ${seed}: maxLength: ${c.message.content}`)
    for (const k of Object.keys(v)) {
      assert.ok(k in schema.properties, `seed ${seed}: extra key ${k}`)
    }
  }
  assert.ok(stopped >= 1, `no answer finished: ${finishes}`)
  return `${stopped}/5 finished, first ${JSON.stringify(first)}`
})

await check('openai conversation', async () => {
  const conv = [{ role: 'system', content: 'You are a scribe.' }]
  const turns = ['Who was the first man?', 'And who was his wife?', 'What did the serpent say?']
  const said = []
  let prev
  for (const [i, user] of turns.entries()) {
    conv.push({ role: 'user', content: user })
    let text, usage
    if (i < 2) {
      const res = await openai.chat.completions.create({ model: 'tiny', messages: conv, temperature: 0, max_tokens: 12 })
      text = res.choices[0].message.content
      usage = res.usage
    } else {
      // The last turn streams: its usage comes in the last chunk.
      const got = await readChatStream(await openai.chat.completions.create({
        model: 'tiny', messages: conv, temperature: 0, max_tokens: 12, stream: true, stream_options: { include_usage: true },
      }))
      text = got.text
      usage = got.usage
    }
    usageOK(usage, `turn ${i + 1}`)
    const cached = usage.prompt_tokens_details?.cached_tokens
    assert.equal(typeof cached, 'number', `turn ${i + 1}: usage ${JSON.stringify(usage)}`)
    assert.ok(cached < usage.prompt_tokens, `turn ${i + 1}: all ${usage.prompt_tokens} prompt tokens cached`)
    if (i > 0) {
      assert.ok(usage.prompt_tokens > prev.prompt_tokens + prev.completion_tokens, `turn ${i + 1}: prompt ${usage.prompt_tokens} tokens`)
      // The cache holds the conversation so far: at least the last prompt.
      assert.ok(cached >= prev.prompt_tokens, `turn ${i + 1}: ${cached} of ${usage.prompt_tokens} prompt tokens cached; the last prompt had ${prev.prompt_tokens}`)
    }
    said.push(`${cached}/${usage.prompt_tokens}`)
    conv.push({ role: 'assistant', content: text })
    prev = usage
  }
  return `cached/prompt tokens ${said.join(' ')}`
})

await check('openai errors', async () => {
  const rejects = (p, Class, status, code, param) => assert.rejects(p, (err) => {
    assert.ok(err instanceof Class, `${err?.constructor?.name}: ${err?.message}`)
    assert.ok(err instanceof OpenAI.APIError)
    assert.equal(err.status, status, err.message)
    assert.equal(err.code, code, err.message)
    assert.equal(err.param, param, err.message)
    assert.equal(err.type, 'invalid_request_error', err.message)
    assert.ok(typeof err.error?.message === 'string' && err.error.message.length > 0, JSON.stringify(err.error))
    return true
  })
  await rejects(openai.chat.completions.create({ ...greedy, max_tokens: 'ten' }), OpenAI.BadRequestError, 400, 'invalid_request', 'max_tokens')
  await rejects(openai.chat.completions.create({ ...greedy, max_tokens: 'ten', stream: true }), OpenAI.BadRequestError, 400, 'invalid_request', 'max_tokens')
  await rejects(openai.chat.completions.create({ ...greedy, temperature: 3 }), OpenAI.BadRequestError, 400, 'invalid_request', 'temperature')
  await rejects(openai.chat.completions.create({ ...greedy, logprobs: true, top_logprobs: 21 }), OpenAI.BadRequestError, 400, 'invalid_request', 'top_logprobs')
  await rejects(openai.chat.completions.create({ ...greedy, messages: [{ role: 'user', content: 'hi' }, { role: 'wizard', content: 'hi' }] }),
    OpenAI.BadRequestError, 400, 'invalid_request', 'messages[1].role')
  await rejects(openai.completions.create({ model: 'tiny', prompt: 'In', max_tokens: 100000 }), OpenAI.BadRequestError, 400, 'invalid_request', 'max_tokens')
  await rejects(openai.chat.completions.create({ ...greedy, model: 'nope' }), OpenAI.NotFoundError, 404, 'model_not_found', 'model')
  await rejects(openai.completions.create({ model: 'nope', prompt: 'In' }), OpenAI.NotFoundError, 404, 'model_not_found', 'model')
  await rejects(openai.models.retrieve('nope'), OpenAI.NotFoundError, 404, 'model_not_found', null)
  // The server still answers after its errors.
  const res = await openai.chat.completions.create(greedy)
  assert.equal(res.choices[0].message.content, plain.choices[0].message.content)
})
