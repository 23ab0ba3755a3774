// conformance.mjs checks an akunu server through OpenAI's official
// JavaScript client (npm: openai, installed by scripts/fetch-openai.sh):
// what an application built on the SDK sees, parsed by the SDK itself.
//
// TestOpenAIConformance (runtime/server/conformance_test.go) runs it with
// node against three servers of stories260K with Qwen3's chat template. By
// hand: copy it next to .cache/openai/node_modules (an ES module resolves
// "openai" from its own directory up; NODE_PATH does not apply) and set
//
//   AKUNU_BASE_URL          the server, ending in /v1
//   AKUNU_MODEL             its model, served with Qwen3's chat template
//   AKUNU_KEY               its key, if it wants one
//   AKUNU_KEYED_BASE_URL    a server started with AKUNU_KEYED_KEY as its key
//   AKUNU_KEYED_KEY
//   AKUNU_LIMITED_BASE_URL  a server with a rate limit of AKUNU_LIMITED_RPM
//   AKUNU_LIMITED_RPM       requests a minute, not used by anything else
//   AKUNU_EMBED_MODEL       an embedding model (no decode programs) of the
//                           AKUNU_BASE_URL server
//
// (the cases of the keyed and limited servers and of the embedding model
// are skipped without them).
// Each case prints one line; a failed one says what it expected and what it
// got, and the script exits 1.

import OpenAI from 'openai';
import { VERSION } from 'openai/version';
import { isDeepStrictEqual } from 'node:util';

const [nodeMajor] = process.versions.node.split('.').map(Number);
if (nodeMajor < 20) {
  console.error(`conformance: Node.js ${process.versions.node} is too old: the openai client and this script want >= 20`);
  process.exit(1);
}

function need(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`conformance: ${name} is not set`);
    process.exit(1);
  }
  return v;
}

const BASE = need('AKUNU_BASE_URL').replace(/\/$/, '');
const MODEL = need('AKUNU_MODEL');
const KEY = process.env.AKUNU_KEY || 'unused';
const KEYED_BASE = process.env.AKUNU_KEYED_BASE_URL;
const KEYED_KEY = process.env.AKUNU_KEYED_KEY;
const LIMITED_BASE = process.env.AKUNU_LIMITED_BASE_URL;
const LIMITED_RPM = Number(process.env.AKUNU_LIMITED_RPM || 0);
const EMBED_MODEL = process.env.AKUNU_EMBED_MODEL;

const client = new OpenAI({ baseURL: BASE, apiKey: KEY, maxRetries: 0, timeout: 60_000 });

// ---- checks ----------------------------------------------------------------

// CheckError is a failed check (anything else thrown is a failure too, shown
// with its class).
class CheckError extends Error {}

// SkipCase ends a case that cannot run here.
class SkipCase extends Error {}

function fail(msg) {
  throw new CheckError(msg);
}

function show(v) {
  if (v === undefined) return 'undefined';
  const s = JSON.stringify(v);
  return s.length > 400 ? s.slice(0, 400) + '...' : s;
}

function eq(what, got, want) {
  if (!Object.is(got, want)) fail(`${what}: expected ${show(want)}, got ${show(got)}`);
}

function deepEq(what, got, want) {
  if (!isDeepStrictEqual(got, want)) fail(`${what}: expected ${show(want)}, got ${show(got)}`);
}

function ok(cond, what, got) {
  if (!cond) fail(arguments.length > 2 ? `${what}, got ${show(got)}` : what);
}

function near(what, got, want, tol = 1e-3) {
  if (!(Math.abs(got - want) <= tol)) fail(`${what}: expected ${want} (within ${tol}), got ${got}`);
}

// expectError runs fn, which must throw the SDK's error class cls with
// status and the error fields given (param, code, type).
async function expectError(what, fn, cls, status, fields = {}) {
  let err;
  try {
    const r = await fn();
    fail(`${what}: expected ${cls.name} (${status}), got a success: ${show(r)}`);
  } catch (e) {
    if (e instanceof CheckError) throw e;
    err = e;
  }
  if (!(err instanceof cls)) {
    fail(`${what}: expected ${cls.name} (${status}), got ${err?.constructor?.name}: ${err?.message}`);
  }
  eq(`${what}: status`, err.status, status);
  for (const [k, v] of Object.entries(fields)) eq(`${what}: error.${k}`, err[k], v);
  return err;
}

// ---- the server's own routes (not in the SDK) ------------------------------

async function post(path, body) {
  const res = await fetch(`${BASE}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) fail(`POST ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// template is POST /v1/chat/template: the prompt a chat request renders to
// and the tokens the chat route feeds.
async function template(body) {
  const t = await post('/chat/template', body);
  ok(typeof t.prompt === 'string' && Array.isArray(t.tokens), 'POST /v1/chat/template: expected {prompt: string, tokens: [ids]}', t);
  return t;
}

async function tokenize(content) {
  const t = await post('/tokenize', { model: MODEL, content, add_special: true });
  ok(Array.isArray(t.tokens), 'POST /v1/tokenize: expected {tokens: [ids]}', t);
  return t.tokens;
}

// ---- requests the cases share ----------------------------------------------

const USER = [{ role: 'user', content: 'Once upon a time, there was a little girl named Lily.' }];
const GREEDY = { model: MODEL, messages: USER, temperature: 0, max_tokens: 40 };
const PROMPT = 'Once upon a time';
const GREEDY_TEXT = { model: MODEL, prompt: PROMPT, temperature: 0, max_tokens: 32 };
const TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

function once(fn) {
  let p;
  return () => (p ??= fn());
}

const greedyChat = once(() => client.chat.completions.create(GREEDY));
const greedyText = once(() => client.completions.create(GREEDY_TEXT));

async function chunksOf(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

const streamChat = (params) => client.chat.completions.create({ ...params, stream: true }).then(chunksOf);
const streamText = (params) => client.completions.create({ ...params, stream: true }).then(chunksOf);

const counts = (u) => u && { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens };

// checkUsage checks a usage object's arithmetic.
function checkUsage(what, u, prompt) {
  ok(u && typeof u === 'object', `${what}: expected a usage object`, u);
  eq(`${what}.prompt_tokens`, u.prompt_tokens, prompt);
  ok(Number.isInteger(u.completion_tokens) && u.completion_tokens >= 1, `${what}.completion_tokens: expected at least 1`, u.completion_tokens);
  eq(`${what}.total_tokens`, u.total_tokens, u.prompt_tokens + u.completion_tokens);
}

// streamParts checks what every stream has: the same id and object in each
// chunk, choice chunks then exactly one finish_reason on the last of them,
// then (includeUsage) one chunk with no choices and the usage. It returns
// the choice chunks and the usage.
function streamParts(chunks, object, includeUsage) {
  ok(chunks.length >= 2, `expected at least 2 chunks`, chunks);
  const id = chunks[0].id;
  ok(typeof id === 'string' && id.length > 0, 'chunk id: expected a non-empty string', id);
  chunks.forEach((c, i) => {
    eq(`chunk ${i}: id`, c.id, id);
    eq(`chunk ${i}: object`, c.object, object);
    eq(`chunk ${i}: model`, c.model, MODEL);
  });
  let usage;
  let rest = chunks;
  if (includeUsage) {
    const last = chunks[chunks.length - 1];
    deepEq('the last chunk (include_usage): choices', last.choices, []);
    ok(last.usage != null, 'the last chunk (include_usage): expected usage', last);
    usage = last.usage;
    rest = chunks.slice(0, -1);
  }
  rest.forEach((c, i) => {
    eq(`chunk ${i}: choices.length`, c.choices.length, 1);
    eq(`chunk ${i}: choices[0].index`, c.choices[0].index, 0);
    ok(c.usage == null, `chunk ${i}: expected no usage before the last chunk`, c.usage);
  });
  const finishes = rest.flatMap((c, i) => (c.choices[0].finish_reason != null ? [i] : []));
  deepEq('the chunks that carry a finish_reason', finishes, [rest.length - 1]);
  return { choices: rest, usage, finish: rest[rest.length - 1].choices[0].finish_reason };
}

// pickStops picks stop strings from a text, one near each of a third, a
// half and two thirds of it: 4 characters whose first occurrence is there,
// neither it nor the character before it a space (a space before the cut
// would be trimmed from the content). Each comes with the text before it.
function pickStops(text) {
  const picks = [];
  for (const at of [1 / 3, 1 / 2, 2 / 3]) {
    for (let i = Math.max(1, Math.floor(text.length * at)); i + 4 <= text.length; i++) {
      const stop = text.slice(i, i + 4);
      if (/\S/.test(text[i - 1]) && /^\S/.test(stop) && text.indexOf(stop) === i) {
        if (!picks.some((p) => p.stop === stop)) picks.push({ stop, before: text.slice(0, i) });
        break;
      }
    }
  }
  ok(picks.length > 0, 'no stop string to pick from the greedy text', text);
  return picks;
}

// ---- cases -----------------------------------------------------------------

const cases = [];
const test = (name, fn) => cases.push({ name, fn });

test('chat: a completion has the shape of OpenAI\'s', async () => {
  const r = await greedyChat();
  ok(typeof r.id === 'string' && r.id.length > 0, 'id: expected a non-empty string', r.id);
  eq('object', r.object, 'chat.completion');
  eq('model', r.model, MODEL);
  ok(Number.isInteger(r.created) && r.created > 1.6e9, 'created: expected a Unix time in seconds', r.created);
  eq('choices.length', r.choices.length, 1);
  const c = r.choices[0];
  eq('choices[0].index', c.index, 0);
  eq('choices[0].message.role', c.message.role, 'assistant');
  ok(typeof c.message.content === 'string' && c.message.content.length > 0, 'choices[0].message.content: expected text', c.message.content);
  ok(['stop', 'length'].includes(c.finish_reason), 'choices[0].finish_reason: expected stop or length', c.finish_reason);
  eq('choices[0].logprobs (not asked for)', c.logprobs, null);
});

test('chat: usage counts the prompt as /v1/chat/template tokenizes it', async () => {
  const [r, t] = await Promise.all([greedyChat(), template({ model: MODEL, messages: USER })]);
  ok(t.prompt.includes(USER[0].content), 'the rendered prompt: expected the user\'s message in it', t.prompt);
  checkUsage('usage', r.usage, t.tokens.length);
  ok(r.usage.completion_tokens <= GREEDY.max_tokens, `usage.completion_tokens: expected at most max_tokens ${GREEDY.max_tokens}`, r.usage.completion_tokens);
  if (r.choices[0].finish_reason === 'length') eq('usage.completion_tokens (finish_reason length)', r.usage.completion_tokens, GREEDY.max_tokens);
});

test('chat: greedy decoding (temperature 0) gives the same text twice', async () => {
  const a = await greedyChat();
  const b = await client.chat.completions.create(GREEDY);
  eq('the second greedy text', b.choices[0].message.content, a.choices[0].message.content);
  eq('the second finish_reason', b.choices[0].finish_reason, a.choices[0].finish_reason);
  eq('the second usage.completion_tokens', b.usage.completion_tokens, a.usage.completion_tokens);
});

const SEEDED = { model: MODEL, messages: USER, temperature: 0.9, max_tokens: 24 };

test('chat: one seed samples the same text twice', async () => {
  const a = await client.chat.completions.create({ ...SEEDED, seed: 1234 });
  const b = await client.chat.completions.create({ ...SEEDED, seed: 1234 });
  eq('the text of the second request with seed 1234', b.choices[0].message.content, a.choices[0].message.content);
});

test('chat: different seeds sample different texts, and a seed\'s text does not depend on its batch', async () => {
  const alone = await client.chat.completions.create({ ...SEEDED, seed: 1234 });
  const seeds = [1, 2, 3, 4, 1234];
  const rs = await Promise.all(seeds.map((seed) => client.chat.completions.create({ ...SEEDED, seed })));
  const texts = rs.map((r) => r.choices[0].message.content);
  ok(new Set(texts.slice(0, 4)).size > 1, 'seeds 1, 2, 3 and 4: expected at least two different texts', texts.slice(0, 4));
  eq('seed 1234 decoded beside other requests', texts[4], alone.choices[0].message.content);
});

test('chat stream: role first, deltas add up to the whole text, one finish_reason last, then usage', async () => {
  const r = await greedyChat();
  const chunks = await streamChat({ ...GREEDY, stream_options: { include_usage: true } });
  const { choices, usage, finish } = streamParts(chunks, 'chat.completion.chunk', true);
  eq('the first chunk: delta.role', choices[0].choices[0].delta.role, 'assistant');
  choices.slice(1).forEach((c, i) => ok(c.choices[0].delta.role == null || c.choices[0].delta.role === 'assistant', `chunk ${i + 1}: delta.role`, c.choices[0].delta.role));
  const text = choices.map((c) => c.choices[0].delta.content ?? '').join('');
  eq('the deltas joined', text, r.choices[0].message.content);
  eq('finish_reason', finish, r.choices[0].finish_reason);
  deepEq('the stream\'s usage', counts(usage), counts(r.usage));
});

test('chat stream: without stream_options.include_usage no chunk has usage', async () => {
  const chunks = await streamChat(GREEDY);
  streamParts(chunks, 'chat.completion.chunk', false);
});

test('chat: a stop string ends the text right before it, finish_reason stop', async () => {
  const g = await greedyChat();
  const picks = pickStops(g.choices[0].message.content);
  for (const { stop, before } of picks) {
    const r = await client.chat.completions.create({ ...GREEDY, stop: [stop] });
    eq(`content with stop ${show(stop)}`, r.choices[0].message.content, before);
    eq(`finish_reason with stop ${show(stop)}`, r.choices[0].finish_reason, 'stop');
    ok(r.usage.completion_tokens < g.usage.completion_tokens, `usage.completion_tokens with stop ${show(stop)}: expected fewer than without (${g.usage.completion_tokens})`, r.usage.completion_tokens);
  }
  return `stops ${picks.map((p) => show(p.stop)).join(', ')}`;
});

test('chat stream: a stop string and any start of it never reach a delta', async () => {
  const g = await greedyChat();
  const picks = pickStops(g.choices[0].message.content);
  for (const { stop, before } of picks) {
    const chunks = await streamChat({ ...GREEDY, stop });
    const { choices, finish } = streamParts(chunks, 'chat.completion.chunk', false);
    let sent = '';
    for (const [i, c] of choices.entries()) {
      const d = c.choices[0].delta.content ?? '';
      ok(!d.includes(stop), `stop ${show(stop)}, chunk ${i}: the stop string in a delta`, d);
      sent += d;
      // Text past the cut can only be the stop string's start, released
      // before the server knew that the stop would match.
      ok(before.startsWith(sent), `stop ${show(stop)}, chunk ${i}: the deltas so far run past the text before the stop ${show(before)} (a start of the stop leaked)`, sent);
    }
    eq(`stop ${show(stop)}: the deltas joined`, sent, before);
    eq(`stop ${show(stop)}: finish_reason`, finish, 'stop');
  }
  return `stops ${picks.map((p) => show(p.stop)).join(', ')}`;
});

test('chat: max_tokens and max_completion_tokens end with finish_reason length', async () => {
  const g = await greedyChat();
  ok(g.usage.completion_tokens > 4, 'the greedy text: expected more than 4 tokens to cut', g.usage.completion_tokens);
  const a = await client.chat.completions.create({ ...GREEDY, max_tokens: 3 });
  eq('max_tokens 3: finish_reason', a.choices[0].finish_reason, 'length');
  eq('max_tokens 3: usage.completion_tokens', a.usage.completion_tokens, 3);
  const { max_tokens, ...rest } = GREEDY;
  const b = await client.chat.completions.create({ ...rest, max_completion_tokens: 4 });
  eq('max_completion_tokens 4: finish_reason', b.choices[0].finish_reason, 'length');
  eq('max_completion_tokens 4: usage.completion_tokens', b.usage.completion_tokens, 4);
  const s = streamParts(await streamChat({ ...GREEDY, max_tokens: 3, stream_options: { include_usage: true } }), 'chat.completion.chunk', true);
  eq('max_tokens 3, streamed: finish_reason', s.finish, 'length');
  eq('max_tokens 3, streamed: usage.completion_tokens', s.usage.completion_tokens, 3);
});

// checkChatLogprobs checks logprobs.content entries: top alternatives
// sorted, the chosen token the first of them (greedy).
function checkChatLogprobs(lp, top) {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  lp.forEach((e, i) => {
    const at = `logprobs.content[${i}]`;
    ok(typeof e.token === 'string', `${at}.token: expected a string`, e.token);
    ok(Number.isFinite(e.logprob) && e.logprob <= 0, `${at}.logprob: expected a finite number <= 0`, e.logprob);
    ok(Array.isArray(e.bytes) && e.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256), `${at}.bytes: expected byte values`, e.bytes);
    let decoded = null;
    try {
      decoded = utf8.decode(Uint8Array.from(e.bytes));
    } catch {
      // a piece of a UTF-8 sequence: the token shows it replaced
    }
    if (decoded !== null) eq(`${at}.bytes decoded`, decoded, e.token);
    ok(Array.isArray(e.top_logprobs), `${at}.top_logprobs: expected an array`, e.top_logprobs);
    eq(`${at}.top_logprobs.length`, e.top_logprobs.length, top);
    e.top_logprobs.forEach((t, j) => {
      ok(typeof t.token === 'string' && Number.isFinite(t.logprob) && t.logprob <= 0 && Array.isArray(t.bytes), `${at}.top_logprobs[${j}]: expected {token, logprob <= 0, bytes}`, t);
      if (j > 0) ok(t.logprob <= e.top_logprobs[j - 1].logprob, `${at}.top_logprobs: expected descending logprobs`, e.top_logprobs.map((x) => x.logprob));
    });
    eq(`${at}: greedy chose the most likely token, top_logprobs[0].token`, e.top_logprobs[0].token, e.token);
    near(`${at}: greedy, top_logprobs[0].logprob`, e.top_logprobs[0].logprob, e.logprob);
  });
}

test('chat: logprobs has one entry per token, each with 3 sorted alternatives', async () => {
  const g = await greedyChat();
  const r = await client.chat.completions.create({ ...GREEDY, logprobs: true, top_logprobs: 3 });
  eq('the greedy text with logprobs', r.choices[0].message.content, g.choices[0].message.content);
  const lp = r.choices[0].logprobs?.content;
  ok(Array.isArray(lp), 'choices[0].logprobs.content: expected an array', r.choices[0].logprobs);
  eq('logprobs.content.length', lp.length, r.usage.completion_tokens);
  checkChatLogprobs(lp, 3);
  eq('the tokens joined (trimmed)', lp.map((e) => e.token).join('').trim(), r.choices[0].message.content.trim());
});

test('chat stream: logprobs arrive with the deltas, one entry per token', async () => {
  const chunks = await streamChat({ ...GREEDY, logprobs: true, top_logprobs: 3, stream_options: { include_usage: true } });
  const { choices, usage } = streamParts(chunks, 'chat.completion.chunk', true);
  const lp = choices.flatMap((c) => c.choices[0].logprobs?.content ?? []);
  eq('logprobs.content entries over the stream', lp.length, usage.completion_tokens);
  checkChatLogprobs(lp, 3);
});

test('completions: a text completion has the shape of OpenAI\'s and counts the prompt', async () => {
  const [r, ids] = await Promise.all([greedyText(), tokenize(PROMPT)]);
  ok(typeof r.id === 'string' && r.id.length > 0, 'id: expected a non-empty string', r.id);
  eq('object', r.object, 'text_completion');
  eq('model', r.model, MODEL);
  ok(Number.isInteger(r.created), 'created: expected an integer', r.created);
  eq('choices.length', r.choices.length, 1);
  const c = r.choices[0];
  eq('choices[0].index', c.index, 0);
  ok(typeof c.text === 'string' && c.text.length > 0, 'choices[0].text: expected text', c.text);
  ok(['stop', 'length'].includes(c.finish_reason), 'choices[0].finish_reason: expected stop or length', c.finish_reason);
  eq('choices[0].logprobs (not asked for)', c.logprobs, null);
  checkUsage('usage', r.usage, ids.length);
});

test('completions stream: chunks add up to the text, one finish_reason last, then usage', async () => {
  const r = await greedyText();
  const chunks = await streamText({ ...GREEDY_TEXT, stream_options: { include_usage: true } });
  const { choices, usage, finish } = streamParts(chunks, 'text_completion', true);
  eq('the chunks joined', choices.map((c) => c.choices[0].text).join(''), r.choices[0].text);
  eq('finish_reason', finish, r.choices[0].finish_reason);
  deepEq('the stream\'s usage', counts(usage), counts(r.usage));
});

test('completions: echo puts the prompt before the text, whole and streamed', async () => {
  const r = await greedyText();
  const e = await client.completions.create({ ...GREEDY_TEXT, echo: true });
  eq('text with echo', e.choices[0].text, PROMPT + r.choices[0].text);
  deepEq('usage with echo', counts(e.usage), counts(r.usage));
  const { choices } = streamParts(await streamText({ ...GREEDY_TEXT, echo: true }), 'text_completion', false);
  eq('the chunks joined with echo', choices.map((c) => c.choices[0].text).join(''), PROMPT + r.choices[0].text);
});

test('completions: logprobs (a number) has the legacy shape', async () => {
  const r = await greedyText();
  const x = await client.completions.create({ ...GREEDY_TEXT, logprobs: 2 });
  const text = x.choices[0].text;
  eq('the greedy text with logprobs', text, r.choices[0].text);
  const lp = x.choices[0].logprobs;
  ok(lp && typeof lp === 'object', 'choices[0].logprobs: expected an object', lp);
  const n = x.usage.completion_tokens;
  eq('logprobs.tokens.length', lp.tokens?.length, n);
  eq('logprobs.token_logprobs.length', lp.token_logprobs?.length, n);
  eq('logprobs.top_logprobs.length', lp.top_logprobs?.length, n);
  eq('logprobs.text_offset.length', lp.text_offset?.length, n);
  eq('the tokens joined', lp.tokens.join(''), text);
  let offset = 0;
  lp.tokens.forEach((tok, i) => {
    const at = `logprobs[${i}]`;
    ok(Number.isFinite(lp.token_logprobs[i]) && lp.token_logprobs[i] <= 0, `${at}: token_logprobs: expected a finite number <= 0`, lp.token_logprobs[i]);
    const top = lp.top_logprobs[i];
    const alts = Object.keys(top ?? {});
    ok(alts.length >= 1 && alts.length <= 2, `${at}: top_logprobs: expected 1 or 2 alternatives (logprobs: 2)`, top);
    ok(tok in top, `${at}: top_logprobs: expected the greedy token ${show(tok)} among them`, top);
    near(`${at}: top_logprobs[${show(tok)}]`, top[tok], lp.token_logprobs[i]);
    ok(Object.values(top).every((v) => v <= top[tok] + 1e-6), `${at}: top_logprobs: expected the greedy token most likely`, top);
    eq(`${at}: text_offset`, lp.text_offset[i], offset);
    offset += tok.length;
  });
});

test('tools: /v1/chat/template renders the tool\'s name and JSON', async () => {
  const t = await template({ model: MODEL, messages: USER, tools: [TOOL] });
  ok(t.prompt.includes('get_weather'), 'the prompt with tools: expected get_weather in it', t.prompt);
  const line = t.prompt.split('\n').find((l) => l.startsWith('{') && l.includes('get_weather'));
  ok(line !== undefined, 'the prompt with tools: expected a line of the tool\'s JSON', t.prompt);
  let parsed;
  try {
    parsed = JSON.parse(line);
  } catch (e) {
    fail(`the tool's line in the prompt is not JSON (${e.message}): ${line}`);
  }
  deepEq('the tool as the prompt renders it', parsed, TOOL);
});

test('tools: they count in usage.prompt_tokens; tool_choice none leaves them out', async () => {
  const [plain, withTools, none] = await Promise.all([
    template({ model: MODEL, messages: USER }),
    template({ model: MODEL, messages: USER, tools: [TOOL] }),
    template({ model: MODEL, messages: USER, tools: [TOOL], tool_choice: 'none' }),
  ]);
  const g = await greedyChat();
  const r = await client.chat.completions.create({ ...GREEDY, tools: [TOOL], max_tokens: 2 });
  eq('usage.prompt_tokens with tools', r.usage.prompt_tokens, withTools.tokens.length);
  ok(r.usage.prompt_tokens > g.usage.prompt_tokens, `usage.prompt_tokens with tools: expected more than without (${g.usage.prompt_tokens})`, r.usage.prompt_tokens);
  eq('the prompt with tool_choice none', none.prompt, plain.prompt);
  const n = await client.chat.completions.create({ ...GREEDY, tools: [TOOL], tool_choice: 'none', max_tokens: 2 });
  eq('usage.prompt_tokens with tool_choice none', n.usage.prompt_tokens, g.usage.prompt_tokens);
});

const TOOL_TURN = [
  { role: 'user', content: 'What is the weather in Paris?' },
  {
    role: 'assistant',
    content: null,
    reasoning_content: 'The user wants the weather.',
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
];

test('reasoning: a turn\'s reasoning_content and tool calls reach the template', async () => {
  const t = await template({ model: MODEL, messages: TOOL_TURN, tools: [TOOL] });
  for (const want of [
    '<|im_start|>assistant\n<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call><|im_end|>',
    '<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
  ]) {
    ok(t.prompt.includes(want), `the prompt: expected ${show(want)} in it`, t.prompt);
  }
  const off = await template({ model: MODEL, messages: USER, chat_template_kwargs: { enable_thinking: false } });
  ok(off.prompt.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n'), 'chat_template_kwargs enable_thinking false: expected the prompt to end with an empty <think>', off.prompt);
});

test('reasoning: reasoning_content is absent or a string, whole and streamed, and no tag leaks', async () => {
  const req = { model: MODEL, messages: TOOL_TURN, tools: [TOOL], temperature: 0, max_tokens: 24 };
  const r = await client.chat.completions.create(req);
  const m = r.choices[0].message;
  ok(m.reasoning_content === undefined || typeof m.reasoning_content === 'string', 'message.reasoning_content: expected absent or a string', m.reasoning_content);
  ok(typeof m.content === 'string', 'message.content: expected a string', m.content);
  for (const tag of ['<think>', '</think>']) {
    ok(!m.content.includes(tag) && !(m.reasoning_content ?? '').includes(tag), `expected no ${tag} in the content or the reasoning`, m);
  }
  const { choices } = streamParts(await streamChat(req), 'chat.completion.chunk', false);
  let content = '';
  let reasoning = '';
  for (const [i, c] of choices.entries()) {
    const d = c.choices[0].delta;
    ok(d.reasoning_content === undefined || typeof d.reasoning_content === 'string', `chunk ${i}: delta.reasoning_content: expected absent or a string`, d.reasoning_content);
    content += d.content ?? '';
    reasoning += d.reasoning_content ?? '';
  }
  eq('the content deltas joined', content, m.content);
  eq('the reasoning deltas joined', reasoning, m.reasoning_content ?? '');
});

test('models: list() holds the model, retrieve() returns it', async () => {
  const page = await client.models.list();
  ok(Array.isArray(page.data), 'models.list(): expected data', page);
  const ids = page.data.map((m) => m.id);
  ok(ids.includes(MODEL), `models.list(): expected ${MODEL} among the ids`, ids);
  for (const m of page.data) {
    eq(`model ${m.id}: object`, m.object, 'model');
    ok(typeof m.owned_by === 'string' && Number.isInteger(m.created), `model ${m.id}: expected owned_by and created`, m);
  }
  const m = await client.models.retrieve(MODEL);
  eq('models.retrieve: id', m.id, MODEL);
  eq('models.retrieve: object', m.object, 'model');
});

test('errors: an unknown model is a NotFoundError (404)', async () => {
  await expectError('chat with model no-such-model', () => client.chat.completions.create({ ...GREEDY, model: 'no-such-model' }), OpenAI.NotFoundError, 404, { code: 'model_not_found' });
  await expectError('completions with model no-such-model', () => client.completions.create({ ...GREEDY_TEXT, model: 'no-such-model' }), OpenAI.NotFoundError, 404);
  await expectError('models.retrieve(no-such-model)', () => client.models.retrieve('no-such-model'), OpenAI.NotFoundError, 404);
});

test('errors: n: 2 is a BadRequestError on param n, streamed or not', async () => {
  await expectError('n: 2', () => client.chat.completions.create({ ...GREEDY, n: 2 }), OpenAI.BadRequestError, 400, { param: 'n', type: 'invalid_request_error' });
  await expectError('n: 2, stream', () => streamChat({ ...GREEDY, n: 2 }), OpenAI.BadRequestError, 400, { param: 'n' });
  await expectError('temperature: 3', () => client.chat.completions.create({ ...GREEDY, temperature: 3 }), OpenAI.BadRequestError, 400, { param: 'temperature' });
});

test('errors: more than the context is a BadRequestError context_length_exceeded', async () => {
  await expectError('max_tokens 1000000', () => client.chat.completions.create({ ...GREEDY, max_tokens: 1_000_000 }), OpenAI.BadRequestError, 400, { code: 'context_length_exceeded', param: 'max_tokens' });
  await expectError('max_tokens 1000000 (completions)', () => client.completions.create({ ...GREEDY_TEXT, max_tokens: 1_000_000 }), OpenAI.BadRequestError, 400, { code: 'context_length_exceeded' });
  const long = 'Lily went to the park and played with her ball. '.repeat(400);
  await expectError('a prompt longer than the context', () => client.chat.completions.create({ ...GREEDY, messages: [{ role: 'user', content: long }] }), OpenAI.BadRequestError, 400, { code: 'context_length_exceeded' });
});

test('errors: a wrong or missing key is an AuthenticationError (401); the right key passes', async () => {
  if (!KEYED_BASE || !KEYED_KEY) throw new SkipCase('AKUNU_KEYED_BASE_URL and AKUNU_KEYED_KEY are not set');
  const wrong = new OpenAI({ baseURL: KEYED_BASE, apiKey: 'sk-wrong', maxRetries: 0, timeout: 60_000 });
  await expectError('a wrong key', () => wrong.models.list(), OpenAI.AuthenticationError, 401, { code: 'invalid_api_key' });
  await expectError('a wrong key (chat)', () => wrong.chat.completions.create(GREEDY), OpenAI.AuthenticationError, 401);
  // A null default header removes the one the SDK would send.
  const none = new OpenAI({ baseURL: KEYED_BASE, apiKey: 'unsent', maxRetries: 0, timeout: 60_000, defaultHeaders: { Authorization: null } });
  await expectError('no key', () => none.models.list(), OpenAI.AuthenticationError, 401);
  const right = new OpenAI({ baseURL: KEYED_BASE, apiKey: KEYED_KEY, maxRetries: 0, timeout: 60_000 });
  const page = await right.models.list();
  ok(page.data.some((m) => m.id === MODEL), `models.list() with the right key: expected ${MODEL}`, page.data);
  const r = await right.chat.completions.create({ ...GREEDY, max_tokens: 2 });
  eq('chat with the right key: choices.length', r.choices.length, 1);
});

test('errors: past the rate limit is a RateLimitError (429) with Retry-After', async () => {
  if (!LIMITED_BASE || !(LIMITED_RPM > 0)) throw new SkipCase('AKUNU_LIMITED_BASE_URL and AKUNU_LIMITED_RPM are not set');
  const limited = new OpenAI({ baseURL: LIMITED_BASE, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
  for (let i = 0; i < LIMITED_RPM; i++) await limited.models.list();
  const e = await expectError(`request ${LIMITED_RPM + 1} within a minute`, () => limited.models.list(), OpenAI.RateLimitError, 429, { code: 'rate_limit_exceeded' });
  const after = e.headers?.get('retry-after');
  ok(/^\d+$/.test(after ?? '') && Number(after) >= 1 && Number(after) <= 60, 'the Retry-After header: expected whole seconds, 1 to 60', after);
});

// ---- structured output (issue 15) ------------------------------------------

const PERSON = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 10 }, age: { type: 'integer', minimum: 0, maximum: 99 } },
  required: ['name', 'age'],
  additionalProperties: false,
};

test('response_format: json_schema (strict) output parses and keeps to the schema, whole and streamed', async () => {
  for (const seed of [1, 2]) {
    const req = { ...SEEDED, seed, max_tokens: 200, response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } } };
    const r = await client.chat.completions.create(req);
    const c = r.choices[0];
    eq(`seed ${seed}: finish_reason`, c.finish_reason, 'stop');
    const v = JSON.parse(c.message.content);
    deepEq(`seed ${seed}: the keys`, Object.keys(v).sort(), ['age', 'name']);
    ok(typeof v.name === 'string' && [...v.name].length <= 10, `seed ${seed}: name: expected a string of at most 10 characters`, v.name);
    ok(Number.isInteger(v.age) && v.age >= 0 && v.age <= 99, `seed ${seed}: age: expected an integer in [0, 99]`, v.age);
    const { choices } = streamParts(await streamChat(req), 'chat.completion.chunk', false);
    eq(`seed ${seed}: the streamed content`, choices.map((ch) => ch.choices[0].delta.content ?? '').join(''), c.message.content);
  }
});

test('response_format: json_object output is one JSON object; a schema the server cannot honor is a 400 naming it', async () => {
  const r = await client.chat.completions.create({ ...SEEDED, max_tokens: 200, response_format: { type: 'json_object' } });
  const v = JSON.parse(r.choices[0].message.content);
  ok(v !== null && typeof v === 'object' && !Array.isArray(v), 'content: expected a JSON object', v);
  const bad = { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', multipleOf: 3 } } };
  const e = await expectError('an unsupported schema keyword', () => client.chat.completions.create({ ...GREEDY, response_format: bad }), OpenAI.BadRequestError, 400, { param: 'response_format.json_schema.schema' });
  ok(e.message.includes('multipleOf'), 'the message: expected the keyword named', e.message);
});

test('tools: tool_choice required gives tool_calls the SDK reads, finish_reason tool_calls, and the same calls streamed', async () => {
  const req = { ...SEEDED, seed: 3, max_tokens: 200, tools: [TOOL], tool_choice: 'required', parallel_tool_calls: false };
  const r = await client.chat.completions.create(req);
  const c = r.choices[0];
  eq('finish_reason', c.finish_reason, 'tool_calls');
  eq('tool_calls.length', c.message.tool_calls?.length, 1);
  const call = c.message.tool_calls[0];
  ok(typeof call.id === 'string' && call.id.length > 0, 'tool_calls[0].id: expected a non-empty string', call.id);
  eq('tool_calls[0].type', call.type, 'function');
  eq('tool_calls[0].function.name', call.function.name, 'get_weather');
  const args = JSON.parse(call.function.arguments);
  ok(typeof args.city === 'string', 'the arguments: expected {city: string}', args);
  const { choices, finish } = streamParts(await streamChat(req), 'chat.completion.chunk', false);
  eq('the stream\'s finish_reason', finish, 'tool_calls');
  let content = '';
  const calls = [];
  for (const ch of choices) {
    const d = ch.choices[0].delta;
    content += d.content ?? '';
    for (const t of d.tool_calls ?? []) {
      ok(Number.isInteger(t.index), 'delta.tool_calls[].index: expected an integer', t);
      if (!calls[t.index]) {
        ok(t.id && t.function?.name, 'a call\'s first delta: expected its id and name', t);
        calls[t.index] = { name: t.function.name, args: '' };
      }
      calls[t.index].args += t.function?.arguments ?? '';
    }
  }
  ok(!content.includes('<tool_call') && !content.includes('</tool_call'), 'the streamed content: expected no part of a tag', content);
  deepEq('the streamed calls', calls, [{ name: call.function.name, args: call.function.arguments }]);
});

// ---- embeddings (issue 17) -------------------------------------------------

const EMBED_TEXTS = ['hello world', 'a second, longer text about embeddings', 'x'];

function needEmbedModel() {
  if (!EMBED_MODEL) throw new SkipCase('AKUNU_EMBED_MODEL is not set');
}

// checkEmbeddings holds a create() result to OpenAI's shape: a unit vector
// of dim numbers per input, in order, and usage counting tokens tokens.
function checkEmbeddings(what, r, n, dim, tokens) {
  eq(`${what}: object`, r.object, 'list');
  eq(`${what}: model`, r.model, EMBED_MODEL);
  eq(`${what}: data.length`, r.data.length, n);
  r.data.forEach((d, i) => {
    eq(`${what}: data[${i}].object`, d.object, 'embedding');
    eq(`${what}: data[${i}].index`, d.index, i);
    ok(Array.isArray(d.embedding) && d.embedding.every((x) => typeof x === 'number' && Number.isFinite(x)), `${what}: data[${i}].embedding: expected an array of numbers`, d.embedding);
    eq(`${what}: data[${i}].embedding.length`, d.embedding.length, dim);
    near(`${what}: data[${i}]'s norm`, Math.hypot(...d.embedding), 1, 1e-4);
  });
  eq(`${what}: usage.prompt_tokens`, r.usage.prompt_tokens, tokens);
  eq(`${what}: usage.total_tokens`, r.usage.total_tokens, tokens);
}

test('embeddings: create() (base64 on the wire, decoded by the SDK) and encoding_format float give the same unit vectors', async () => {
  needEmbedModel();
  const m = await client.models.retrieve(EMBED_MODEL);
  const dim = m.meta?.embedding_dim;
  ok(Number.isInteger(dim) && dim > 0, 'models.retrieve: expected meta.embedding_dim', m.meta);
  let tokens = 0;
  for (const content of EMBED_TEXTS) {
    const t = await post('/tokenize', { model: EMBED_MODEL, content, add_special: true, parse_special: false });
    tokens += t.tokens.length;
  }
  const b64 = await client.embeddings.create({ model: EMBED_MODEL, input: EMBED_TEXTS });
  const flt = await client.embeddings.create({ model: EMBED_MODEL, input: EMBED_TEXTS, encoding_format: 'float' });
  checkEmbeddings('default (base64)', b64, EMBED_TEXTS.length, dim, tokens);
  checkEmbeddings('float', flt, EMBED_TEXTS.length, dim, tokens);
  // JSON carries each float32 in its shortest decimal form: rounded to
  // float32 it is the value base64 carries, bit for bit.
  b64.data.forEach((d, i) => {
    const diff = d.embedding.findIndex((x, k) => x !== Math.fround(flt.data[i].embedding[k]));
    ok(diff < 0, `data[${i}]: base64 and float differ at element ${diff}`, [d.embedding[diff], flt.data[i].embedding[diff]]);
  });
  const one = await client.embeddings.create({ model: EMBED_MODEL, input: EMBED_TEXTS[1], dimensions: dim });
  eq('a single string: data.length', one.data.length, 1);
  ok(one.data[0].embedding.every((x, k) => x === b64.data[1].embedding[k]), 'a single string: expected the vector it has in an array', one.data[0].embedding.slice(0, 4));
});

test('embeddings: token ids, and arrays of them, embed as the text they tokenize to', async () => {
  needEmbedModel();
  const t = await post('/tokenize', { model: EMBED_MODEL, content: EMBED_TEXTS[0], add_special: true, parse_special: false });
  const text = await client.embeddings.create({ model: EMBED_MODEL, input: EMBED_TEXTS[0] });
  const ids = await client.embeddings.create({ model: EMBED_MODEL, input: t.tokens });
  const idss = await client.embeddings.create({ model: EMBED_MODEL, input: [t.tokens, t.tokens] });
  eq('input: [[ids], [ids]]: data.length', idss.data.length, 2);
  for (const [what, r] of [['input: [ids]', ids.data[0]], ['input: [[ids], [ids]] [0]', idss.data[0]], ['input: [[ids], [ids]] [1]', idss.data[1]]]) {
    ok(r.embedding.every((x, k) => x === text.data[0].embedding[k]), `${what}: expected the text's vector`, r.embedding.slice(0, 4));
  }
  eq('input: [ids]: usage.prompt_tokens', ids.usage.prompt_tokens, t.tokens.length);
});

test('errors: embeddings a model cannot give, and chat with an embedding model, are BadRequestErrors naming the field', async () => {
  needEmbedModel();
  await expectError('embeddings of a generative model', () => client.embeddings.create({ model: MODEL, input: 'hi' }), OpenAI.BadRequestError, 400, { param: 'model', type: 'invalid_request_error' });
  await expectError('chat with an embedding model', () => client.chat.completions.create({ ...GREEDY, model: EMBED_MODEL }), OpenAI.BadRequestError, 400, { param: 'model' });
  await expectError('a streamed chat with an embedding model', () => streamChat({ ...GREEDY, model: EMBED_MODEL }), OpenAI.BadRequestError, 400, { param: 'model' });
  await expectError('completions with an embedding model', () => client.completions.create({ ...GREEDY_TEXT, model: EMBED_MODEL }), OpenAI.BadRequestError, 400, { param: 'model' });
  await expectError('an empty input', () => client.embeddings.create({ model: EMBED_MODEL, input: '' }), OpenAI.BadRequestError, 400, { param: 'input' });
  await expectError('an empty array', () => client.embeddings.create({ model: EMBED_MODEL, input: [] }), OpenAI.BadRequestError, 400, { param: 'input' });
  await expectError('other dimensions', () => client.embeddings.create({ model: EMBED_MODEL, input: 'hi', dimensions: 3 }), OpenAI.BadRequestError, 400, { param: 'dimensions' });
  const long = 'hello world '.repeat(2000);
  await expectError('an input past the context', () => client.embeddings.create({ model: EMBED_MODEL, input: long }), OpenAI.BadRequestError, 400, { param: 'input', code: 'context_length_exceeded' });
});

// ---- run -------------------------------------------------------------------

let passed = 0;
let skipped = 0;
const failed = [];
for (const c of cases) {
  const start = performance.now();
  try {
    const note = await c.fn();
    passed++;
    console.log(`ok   ${c.name} (${Math.round(performance.now() - start)} ms${note ? `; ${note}` : ''})`);
  } catch (e) {
    if (e instanceof SkipCase) {
      skipped++;
      console.log(`skip ${c.name}: ${e.message}`);
      continue;
    }
    failed.push(c.name);
    const why = e instanceof CheckError ? e.message : `${e?.constructor?.name}: ${e?.message}\n${e?.stack ?? ''}`;
    console.log(`FAIL ${c.name}: ${why}`);
  }
}
console.log(`conformance (openai ${VERSION}): ${passed} cases passed, ${failed.length} failed, ${skipped} skipped`);
if (failed.length > 0) {
  console.log(`failed: ${failed.join('; ')}`);
  process.exit(1);
}
