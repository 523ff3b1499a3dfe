// `metrl serve` as a rollout server, over real HTTP on 127.0.0.1 (the real binary, a tiny checkpoint): vLLM's
// /v1/completions with a token-id prompt answers in vLLM's shape, which the trainer's client (models/remote/) reads;
// /v1/chat/completions with a data-URL image, logprobs and return_token_ids answers with the prompt's token ids as the
// policy's chatPrompt makes them and each choice's token ids and log-probs, which the client checks against its own
// tokens (a prompt tokenised otherwise is one line);
// the log-probs are the model's own at the request's temperature (--logprobs-mode processed_logprobs); loading an
// adapter through /v1/load_lora_adapter changes them to the adapted model's, and unloading restores the base. Bad
// input: a server without --enable-lora, an adapter path the server cannot read, a port where nothing listens: one
// line each from the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServe, type Served } from '../../helpers/serve-process.ts';
import { killGroup } from '../../helpers/tracked-children.ts';
import { tinyBaseCheckpoint } from '../../trainer/tiny-base.ts';
import { initBackend } from '../../../models/backend.ts';
import { loadPolicy } from '../../../models/load.ts';
import { Rng } from '../../../core/rng.ts';
import { parseVllmChat, parseVllmCompletions } from '../../../models/remote/vllm-protocol.ts';
import { encodePng } from '../../../core/image.ts';
import { pngDataUrl, type ChatMessage } from '../../../core/chat.ts';
import type { EncodedPrompt } from '../../../models/types.ts';
import { RolloutPool } from '../../../models/remote/rollout-pool.ts';

const base = tinyBaseCheckpoint();
let lora: Served;
let plain: Served;
let adapterDir = '';
const PROMPT = [1, 40, 41, 10, 42];
/** The built-in tokenizer's vocabulary (the tiny checkpoint's). */
const VOCAB = 101;

async function post(url: string, body: object): Promise<{ status: number; json: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await response.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // plain-text answers (the LoRA routes)
  }
  return { status: response.status, json };
}

/** The checkpoint's own log-probs of `completion` after PROMPT at temperature T, with the adapter in `adapter` or none. */
async function localLogProbs(completion: number[], temperature: number, adapter?: string): Promise<number[]> {
  const { policy } = await loadPolicy(base, { backend: 'wasm' });
  if (adapter) policy.loadAdapter(adapter);
  const lp = policy.tokenLogProbs([{ prompt: { tokens: PROMPT, images: [] }, completion }], {
    useLora: adapter !== undefined,
    temperature,
  });
  const values = Array.from(lp.logProbs.dataSync()).slice(0, completion.length);
  tf.dispose([lp.logProbs, lp.mask]);
  policy.dispose();
  return values;
}

/** The checkpoint's own prompt for chat messages, and its log-probs of `completion` after it at temperature T. */
async function localChat(
  messages: ChatMessage[],
  completion: number[],
  temperature: number,
): Promise<{ prompt: EncodedPrompt; logProbs: number[] }> {
  const { policy } = await loadPolicy(base, { backend: 'wasm' });
  const prompt = await policy.chatPrompt(messages);
  const lp = policy.tokenLogProbs([{ prompt, completion }], { useLora: false, temperature });
  const logProbs = Array.from(lp.logProbs.dataSync()).slice(0, completion.length);
  tf.dispose([lp.logProbs, lp.mask]);
  policy.dispose();
  return { prompt, logProbs };
}

/** A user message as the built-in template reads it: a label, a 16-pixel image (the tiny model's size), the answer cue. */
async function imageMessages(): Promise<ChatMessage[]> {
  const rng = new Rng(7, 'pixels');
  const data = Uint8Array.from({ length: 16 * 16 * 3 }, () => Math.floor(rng.next() * 256));
  const url = pngDataUrl(await encodePng({ width: 16, height: 16, channels: 3, data }));
  return [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'shell\nA: ' },
        { type: 'image_url', image_url: { url } },
        { type: 'text', text: '\nFINAL ANSWER: ' },
      ],
    },
  ];
}

/** A URL on 127.0.0.1 where nothing listens (a port just freed). */
async function closedPort(): Promise<string> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((done) => server.once('listening', done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  await initBackend('wasm', null);
  [lora, plain] = await Promise.all([
    startServe([
      '--checkpoint',
      base,
      '--port',
      '0',
      '--backend',
      'wasm',
      '--enable-lora',
      '--logprobs-mode',
      'processed_logprobs',
    ]),
    startServe(['--checkpoint', base, '--port', '0', '--backend', 'wasm']),
  ]);
  // An adapter whose B is not zero, so that it changes the model.
  const { policy } = await loadPolicy(base, { backend: 'wasm' });
  policy.attachLora({ r: 4, alpha: 8 }, new Rng(3, 'lora'));
  for (const v of policy.trainableVariables('lora')) v.assign(tf.randomNormal(v.shape, 0, 0.5, 'float32', 11));
  adapterDir = join(mkdtempSync(join(tmpdir(), 'metrl-adapter-')), 'v1');
  policy.saveAdapter(adapterDir, { baseModel: base });
  policy.dispose();
}, 60_000);

afterAll(() => {
  killGroup(lora.child);
  killGroup(plain.child);
});

describe("metrl serve in vLLM's dialect", () => {
  it('answers a token-id prompt with token_ids and token_logprobs as vLLM does, at the request temperature', async () => {
    const { status, json } = await post(`${lora.url}/completions`, {
      prompt: PROMPT,
      n: 3,
      temperature: 0.7,
      max_tokens: 4,
      seed: 5,
      logprobs: 0,
      return_token_ids: true,
    });
    expect(status).toBe(200);
    expect(json.object).toBe('text_completion');
    expect(json.choices.map((c: any) => c.prompt_token_ids)).toEqual([PROMPT, PROMPT, PROMPT]);
    const parsed = parseVllmCompletions(json, 3);
    if (typeof parsed === 'string') throw new Error(parsed);
    for (const c of parsed) {
      expect(c.tokens.length).toBeGreaterThan(0);
      const local = await localLogProbs(c.tokens, 0.7);
      Array.from(c.logProbs).forEach((x, i) => expect(x).toBeCloseTo(local[i], 4));
    }
    // A seed gives the same samples again.
    const again = await post(`${lora.url}/completions`, {
      prompt: PROMPT,
      n: 3,
      temperature: 0.7,
      max_tokens: 4,
      seed: 5,
      logprobs: 0,
      return_token_ids: true,
    });
    expect(again.json.choices.map((c: any) => c.token_ids)).toEqual(json.choices.map((c: any) => c.token_ids));
  });

  it("honours vLLM's top_k and min_p: top_k 1 and min_p 1 both draw the greedy answer, with log-probs over the whole vocabulary", async () => {
    const ask = (extra: object) =>
      post(`${lora.url}/completions`, {
        prompt: PROMPT,
        n: 4,
        max_tokens: 4,
        seed: 3,
        logprobs: 0,
        return_token_ids: true,
        ...extra,
      });
    const greedy = (await ask({ temperature: 0, n: 1 })).json.choices[0].token_ids;
    for (const truncation of [{ top_k: 1 }, { min_p: 1 }]) {
      const { status, json } = await ask({ temperature: 1, ...truncation });
      expect(status).toBe(200);
      for (const c of json.choices) expect(c.token_ids).toEqual(greedy);
      // The recorded log-probs are the model's own over the whole vocabulary (not renormalised to the one kept token).
      const local = await localLogProbs(greedy, 1);
      json.choices[0].logprobs.token_logprobs.forEach((x: number, i: number) => expect(x).toBeCloseTo(local[i], 4));
      expect(local.some((x) => x < -1e-3)).toBe(true);
    }
    // Without them, the same seed draws something else than greedy from the nearly uniform tiny model.
    const free = await ask({ temperature: 1 });
    expect(free.json.choices.some((c: any) => JSON.stringify(c.token_ids) !== JSON.stringify(greedy))).toBe(true);
  });

  it("loads an adapter at run time: the served log-probs become the adapted model's, and unloading restores the base", async () => {
    const greedy = { prompt: PROMPT, temperature: 0, max_tokens: 3, logprobs: 0, return_token_ids: true };
    const before = (await post(`${lora.url}/completions`, greedy)).json.choices[0];
    const loaded = await post(`${lora.url}/load_lora_adapter`, {
      lora_name: 'metrl-policy',
      lora_path: adapterDir,
      load_inplace: true,
    });
    expect(loaded).toEqual({ status: 200, json: "Success: LoRA adapter 'metrl-policy' added successfully." });
    // metrl serve holds one model at a time: whatever a request names, the adapter answers now, and says so.
    const baseNow = await post(`${lora.url}/completions`, { ...greedy, model: 'base' });
    expect(baseNow.status).toBe(200);
    expect(baseNow.json.model).toBe('metrl-policy');
    const afterAnswer = (await post(`${lora.url}/completions`, { ...greedy, model: 'metrl-policy' })).json;
    expect(afterAnswer.model).toBe('metrl-policy');
    const after = afterAnswer.choices[0];
    const adapted = await localLogProbs(after.token_ids, 1, adapterDir);
    after.logprobs.token_logprobs.forEach((x: number, i: number) => expect(x).toBeCloseTo(adapted[i], 4));
    expect(after.logprobs.token_logprobs).not.toEqual(before.logprobs.token_logprobs);
    expect((await post(`${lora.url}/unload_lora_adapter`, { lora_name: 'metrl-policy' })).status).toBe(200);
    const restored = (await post(`${lora.url}/completions`, greedy)).json.choices[0];
    expect(restored.token_ids).toEqual(before.token_ids);
    restored.logprobs.token_logprobs.forEach((x: number, i: number) =>
      expect(x).toBeCloseTo(before.logprobs.token_logprobs[i], 5),
    );
  });
});

describe("metrl serve in vLLM's chat dialect (image prompts)", () => {
  it('answers a data-URL image prompt with prompt_token_ids, token_ids and logprobs.content as vLLM does', async () => {
    const messages = await imageMessages();
    const body = { messages, n: 2, temperature: 0.7, max_tokens: 4, seed: 5, logprobs: true, return_token_ids: true };
    const { status, json } = await post(`${lora.url}/chat/completions`, body);
    expect(status).toBe(200);
    expect(Object.keys(json).sort()).toEqual([
      'choices',
      'created',
      'id',
      'model',
      'object',
      'prompt_token_ids',
      'usage',
    ]);
    expect(Object.keys(json.choices[0]).sort()).toEqual([
      'finish_reason',
      'index',
      'logprobs',
      'message',
      'stop_reason',
      'token_ids',
    ]);
    expect(Object.keys(json.choices[0].logprobs.content[0]).sort()).toEqual([
      'bytes',
      'logprob',
      'token',
      'top_logprobs',
    ]);
    const parsed = parseVllmChat(json, 2);
    if (typeof parsed === 'string') throw new Error(parsed);
    for (const c of parsed.completions) {
      const local = await localChat(messages, c.tokens, 0.7);
      expect(parsed.promptTokenIds).toEqual(local.prompt.tokens);
      expect(local.prompt.images).toHaveLength(1);
      Array.from(c.logProbs).forEach((x, i) => expect(x).toBeCloseTo(local.logProbs[i], 4));
    }
    expect(json.usage.prompt_tokens).toBe(parsed.promptTokenIds!.length);
    // Without the rollout fields the answer is the plain OpenAI one.
    const plain = await post(`${lora.url}/chat/completions`, { messages, max_tokens: 2 });
    expect(plain.json.prompt_token_ids).toBeUndefined();
    expect(plain.json.choices[0].logprobs).toBeNull();
    // With them too, any `model` is served, and the answer names the model that served it (nothing is loaded: the base).
    const other = await post(`${lora.url}/chat/completions`, { ...body, model: 'elsewhere' });
    expect(other.status).toBe(200);
    expect(other.json.model).toBe(json.model);
  });

  it('the rollout client samples an image prompt there, and refuses one the server tokenised otherwise', async () => {
    const messages = await imageMessages();
    const { prompt } = await localChat(messages, [2], 1);
    const sampling = { temperature: 1, topP: 1, maxNewTokens: 3 };
    const pool = new RolloutPool([lora.url], 'vllm', 20_000, VOCAB);
    const { groups } = await pool.sampleGroups([{ tokens: prompt.tokens, messages }], 3, sampling, [4], {
      version: 0,
      path: adapterDir,
    });
    expect(groups[0]).toHaveLength(3);
    for (const c of groups[0]) expect(c.logProbs).toHaveLength(c.tokens.length);
    const shifted = [...prompt.tokens.slice(0, 3), 40, ...prompt.tokens.slice(3)];
    await expect(
      pool.sampleGroups([{ tokens: shifted, messages }], 2, sampling, [4], { version: 0, path: adapterDir }),
    ).rejects.toThrow(
      new RegExp(
        `^rollout server http://127\\.0\\.0\\.1:\\d+ tokenised the prompt otherwise than metrl \\(prompt_token_ids: ${prompt.tokens.length} tokens against metrl's ${shifted.length}, first difference at position 3\\): the learner would score other tokens`,
      ),
    );
  });
});

describe('the rollout client on bad servers: one line each', () => {
  const sampling = { temperature: 1, topP: 1, maxNewTokens: 2 };
  const sample = (urls: string[], path: string) =>
    new RolloutPool(urls, 'vllm', 5_000, VOCAB).sampleGroups([{ tokens: PROMPT }], 2, sampling, [1], {
      version: 0,
      path,
    });

  it('a server without LoRA enabled', async () => {
    await expect(sample([plain.url], adapterDir)).rejects.toThrow(
      /no \/v1\/load_lora_adapter, LoRA is not enabled \(start vLLM with --enable-lora/,
    );
  });

  it('an adapter path the server cannot read', async () => {
    await expect(sample([lora.url], '/nonexistent/adapter')).rejects.toThrow(
      /cannot load the adapter \/nonexistent\/adapter: lora_path .* no adapter_config.json/,
    );
  });

  it('a port where nothing listens, and a replica that does not answer in time besides a good one', async () => {
    const closed = await closedPort();
    await expect(sample([closed], adapterDir)).rejects.toThrow(
      /^no rollout server answered \(http:\/\/127\.0\.0\.1:\d+\/v1\/load_lora_adapter: ECONNREFUSED\); the run stopped/,
    );
    // A replica that accepts connections and never answers: set aside after the timeout, its groups go to the other.
    const silent = createServer(() => {}).listen(0, '127.0.0.1');
    await new Promise((done) => silent.once('listening', done));
    const pool = new RolloutPool(
      [closed, `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, lora.url],
      'vllm',
      1_000,
      VOCAB,
    );
    const { groups, origins } = await pool.sampleGroups(
      [{ tokens: PROMPT }, { tokens: PROMPT }, { tokens: PROMPT }],
      2,
      sampling,
      [1, 2, 3],
      { version: 0, path: adapterDir },
    );
    expect(groups.map((g) => g.length)).toEqual([2, 2, 2]);
    expect(new Set(origins.map((o) => o.server))).toEqual(new Set([lora.url.replace(/\/v1$/, '')]));
    expect(pool.retries).toBeGreaterThanOrEqual(2);
    silent.closeAllConnections();
    silent.close();
  });
});
