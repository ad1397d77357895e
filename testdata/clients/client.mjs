// Drives sirun serve's ollama API with the official ollama client; run by
// server/ollama_test.go as: node client.mjs http://127.0.0.1:PORT
// (the server serves the tiny test model as "tiny"). Exits 1 on a failure.
import { Ollama } from 'ollama'
import assert from 'node:assert/strict'

const ollama = new Ollama({ host: process.argv[2] })
const options = { temperature: 0, num_predict: 16 }
const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Who made the heaven and the earth?' }]

const chat = await ollama.chat({ model: 'tiny:latest', messages, options })
assert.equal(chat.message.role, 'assistant')
assert.ok(chat.message.content.length > 0, 'empty chat answer')
assert.equal(chat.done, true)
assert.ok(['stop', 'length'].includes(chat.done_reason), chat.done_reason)
assert.ok(chat.eval_count >= 1 && chat.eval_count <= 16 && chat.prompt_eval_count > 0 && chat.total_duration > 0)
console.log('ok chat', JSON.stringify(chat.message.content))

let streamed = '', parts = 0, last
for await (const part of await ollama.chat({ model: 'tiny', messages, options, stream: true })) {
  streamed += part.message.content
  parts++
  last = part
}
assert.equal(streamed, chat.message.content)
assert.ok(parts >= 2 && last.done && last.eval_count === chat.eval_count, `${parts} parts, last ${JSON.stringify(last)}`)
console.log('ok chat stream', parts, 'parts')

const gen = await ollama.generate({ model: 'tiny', prompt: 'In the beginning', raw: true, options })
assert.ok(gen.response.length > 0 && gen.done)
streamed = ''
for await (const part of await ollama.generate({ model: 'tiny', prompt: 'In the beginning', raw: true, options, stream: true })) {
  streamed += part.response
  last = part
}
assert.equal(streamed, gen.response)
assert.ok(last.done && ['stop', 'length'].includes(last.done_reason))
console.log('ok generate', JSON.stringify(gen.response))

const list = await ollama.list()
assert.equal(list.models.length, 1)
assert.equal(list.models[0].name, 'tiny:latest')
assert.equal(list.models[0].details.family, 'llama')
assert.ok(list.models[0].size > 0 && list.models[0].digest.length === 64)
console.log('ok list', list.models[0].name, list.models[0].details.parameter_size)

const show = await ollama.show({ model: list.models[0].name })
assert.equal(show.model_info['general.architecture'], 'llama')
assert.ok(show.template.length > 0 && show.parameters.includes('num_ctx'))
console.log('ok show')

const version = await ollama.version()
assert.match(version.version, /^\d+\.\d+\.\d+$/)
console.log('ok version', version.version)

const ps = await ollama.ps()
assert.equal(ps.models.length, 1)
assert.equal(ps.models[0].name, 'tiny:latest')
console.log('ok ps')

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
console.log('ok errors')
