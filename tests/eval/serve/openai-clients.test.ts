// `metrl serve` as real clients use it: the official OpenAI Node SDK and @huggingface/inference against the real
// binary on 127.0.0.1, for the shipped built-in model and for a Hugging Face checkpoint (a copy of the idefics3 fixture,
// a VLM). Chat (the developer role, any `model`, max_completion_tokens), n with a seed, stop strings (cut before the
// string, finish_reason stop; also /v1/completions), streaming (one role delta, then content deltas per index, usage,
// [DONE]; the same text as the plain answer; a stream given up halfway does not stop the server), logprobs with
// top_logprobs, and image parts. The built-in model's long greedy answer, decoded by the server over several rounds,
// is the in-process one-shot answer token for token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { chatCompletion, chatCompletionStream } from '@huggingface/inference';
import { join } from 'node:path';
import { startServe, type Served } from '../../helpers/serve-process.ts';
import { killGroup } from '../../helpers/tracked-children.ts';
import { hfCheckpointCopy, removeHfCopies } from '../../helpers/hf-checkpoint-copy.ts';
import { initBackend } from '../../../models/backend.ts';
import { loadPolicy } from '../../../models/load.ts';
import { generateEpisodes } from '../../../envs/generate.ts';
import { shellEnv } from '../../../envs/shell/index.ts';
import { Rng } from '../../../core/rng.ts';
import { encodePng } from '../../../core/image.ts';
import { pngDataUrl, type ChatMessage } from '../../../core/chat.ts';
import { CHECKPOINTS_DIR } from '../../../core/paths.ts';

type Messages = OpenAI.Chat.ChatCompletionMessageParam[];

interface Target {
  name: string;
  served: Served;
  client: OpenAI;
  /** A text prompt the model answers at some length, and one with an image. */
  text: Messages;
  image: Messages;
  /** Answer length used for the greedy checks. */
  tokens: number;
}

const BASE = join(CHECKPOINTS_DIR, 'base');
const targets: Target[] = [];
let builtinImage: ChatMessage[] = [];

const client = (served: Served) =>
  new OpenAI({ baseURL: served.url, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });

/** A 16 × 16 picture as a data URL (the idefics3 fixture resizes what it gets). */
async function pictureUrl(): Promise<string> {
  const rng = new Rng(3, 'pixels');
  const data = Uint8Array.from({ length: 16 * 16 * 3 }, () => Math.floor(rng.next() * 256));
  return pngDataUrl(await encodePng({ width: 16, height: 16, channels: 3, data }));
}

beforeAll(async () => {
  await initBackend('wasm', null);
  // The built-in model's compact layout, with its own 64-px renderings for the image prompt.
  const { policy } = await loadPolicy(BASE, { backend: 'wasm' });
  const [episode] = generateEpisodes(shellEnv, { n: 1, actions: 3, split: 'test', seed: 4, modality: 'image' });
  builtinImage = await policy.promptMessages(shellEnv, episode);
  policy.dispose();
  const idefics3 = hfCheckpointCopy('idefics3');
  const [builtin, hf] = await Promise.all([
    startServe(['--checkpoint', BASE, '--port', '0', '--threads', '1', '--model-id', 'metrl-base']),
    startServe(['--checkpoint', idefics3, '--port', '0', '--threads', '1', '--model-id', 'tiny-vlm']),
  ]);
  const picture = await pictureUrl();
  targets.push(
    {
      name: 'built-in',
      served: builtin,
      client: client(builtin),
      text: [{ role: 'user', content: 'shell\n1\nA: 1 swap 2\nB: 2 swap 3\nC: 1 swap 3\ntrace\nstart -> 1\n' }],
      image: builtinImage as Messages,
      tokens: 120,
    },
    {
      name: 'Hugging Face (idefics3)',
      served: hf,
      client: client(hf),
      text: [{ role: 'user', content: 'Where is the ball after three swaps?' }],
      image: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: picture } },
          ],
        },
      ],
      tokens: 40,
    },
  );
}, 180_000);

afterAll(() => {
  for (const t of targets) killGroup(t.served.child);
  removeHfCopies();
});

/** The greedy answer of a target's text prompt. */
async function greedy(t: Target, extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}) {
  return t.client.chat.completions.create({
    model: 'any-name',
    messages: t.text,
    temperature: 0,
    max_tokens: t.tokens,
    ...extra,
  });
}

describe.each([0, 1])('the OpenAI SDK against metrl serve (%#: built-in, Hugging Face)', (k) => {
  const t = () => targets[k];

  it('chat: the developer role, any model name, max_completion_tokens; the answer names the served model', async () => {
    const answer = await t().client.chat.completions.create({
      model: 'whatever-the-client-says',
      messages: [{ role: 'developer', content: 'Answer briefly.' }, ...t().text],
      temperature: 0,
      max_completion_tokens: 5,
    });
    expect(answer.model).toBe(k === 0 ? 'metrl-base' : 'tiny-vlm');
    expect(answer.object).toBe('chat.completion');
    expect(answer.choices).toHaveLength(1);
    expect(answer.usage?.completion_tokens).toBeLessThanOrEqual(5);
    expect(answer.choices[0].finish_reason === 'length' || answer.usage!.completion_tokens < 5).toBe(true);
    // The developer message is read as the system one: it lengthens the prompt.
    const without = await t().client.chat.completions.create({
      model: 'x',
      messages: t().text,
      max_completion_tokens: 1,
    });
    expect(answer.usage!.prompt_tokens).toBeGreaterThan(without.usage!.prompt_tokens);
  });

  it('n choices with a seed, the same again for the same seed', async () => {
    const ask = () =>
      t().client.chat.completions.create({
        model: 'm',
        messages: t().text,
        n: 3,
        temperature: 1,
        seed: 11,
        max_tokens: 12,
      });
    const [a, b] = [await ask(), await ask()];
    expect(a.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(b.choices.map((c) => c.message.content)).toEqual(a.choices.map((c) => c.message.content));
  });

  it('stop: the answer ends before the stop string, finish_reason stop, on chat and on /v1/completions', async () => {
    const whole = (await greedy(t())).choices[0].message.content!;
    // A stop string from the middle of the greedy answer: the first place it occurs is where the answer must end.
    const stop = whole.slice(Math.floor(whole.length / 2), Math.floor(whole.length / 2) + 2);
    const cut = whole.slice(0, whole.indexOf(stop));
    const stopped = await greedy(t(), { stop: ['never-written', stop] });
    expect(stopped.choices[0].message.content).toBe(cut);
    expect(stopped.choices[0].finish_reason).toBe('stop');
    expect(stopped.usage!.completion_tokens).toBeLessThan((await greedy(t())).usage!.completion_tokens);
    const completion = await t().client.completions.create({
      model: 'm',
      prompt: 'shell\n1\nA: 1 swap 2\n',
      temperature: 0,
      max_tokens: 30,
    });
    const text = completion.choices[0].text;
    const at = Math.max(1, Math.floor(text.length / 2));
    const stoppedCompletion = await t().client.completions.create({
      model: 'm',
      prompt: 'shell\n1\nA: 1 swap 2\n',
      temperature: 0,
      max_tokens: 30,
      stop: text.slice(at, at + 1),
    });
    expect(stoppedCompletion.choices[0].text).toBe(text.slice(0, text.indexOf(text.slice(at, at + 1))));
    expect(stoppedCompletion.choices[0].finish_reason).toBe('stop');
  });

  it('streams: a role delta, content deltas by index, finish reasons, usage, the plain answer exactly', async () => {
    const plain = await greedy(t(), { n: 2 });
    const stream = await t().client.chat.completions.create({
      model: 'm',
      messages: t().text,
      temperature: 0,
      max_tokens: t().tokens,
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ['', ''];
    const finish: (string | null)[] = [null, null];
    let chunks = 0;
    let roles = 0;
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe('chat.completion.chunk');
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.delta.role === 'assistant') roles++;
        expect(finish[c.index]).toBeNull();
        texts[c.index] += c.delta.content ?? '';
        if (c.finish_reason) finish[c.index] = c.finish_reason;
      }
    }
    expect(roles).toBe(2);
    expect(texts).toEqual(plain.choices.map((c) => c.message.content));
    expect(finish).toEqual(plain.choices.map((c) => c.finish_reason));
    expect(usage).toEqual(plain.usage);
    // More than a role chunk, the text, a finish and the usage: the text came in several deltas.
    expect(chunks).toBeGreaterThan(5);
  });

  it('streams with a stop string without ever sending it', async () => {
    const whole = (await greedy(t())).choices[0].message.content!;
    const stop = whole.slice(Math.floor(whole.length / 2), Math.floor(whole.length / 2) + 3);
    const stream = await t().client.chat.completions.create({
      model: 'm',
      messages: t().text,
      temperature: 0,
      max_tokens: t().tokens,
      stop,
      stream: true,
    });
    let text = '';
    let reason: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      reason = chunk.choices[0]?.finish_reason ?? reason;
    }
    expect(text).toBe(whole.slice(0, whole.indexOf(stop)));
    expect(reason).toBe('stop');
  });

  it('a stream given up after its first delta leaves the server answering', async () => {
    const stream = await t().client.chat.completions.create({
      model: 'm',
      messages: t().text,
      temperature: 1,
      max_tokens: 1000,
      n: 8,
      stream: true,
    });
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) break; // leaving the loop aborts it
    const after = await greedy(t(), { max_tokens: 4 });
    expect(after.choices[0].message.content?.length).toBeGreaterThan(0);
  });

  it('logprobs with top_logprobs: the most likely tokens of each draw, best first, the greedy token first', async () => {
    const answer = await greedy(t(), { max_tokens: 6, logprobs: true, top_logprobs: 5 });
    const content = answer.choices[0].logprobs!.content!;
    expect(content.length).toBe(answer.usage!.completion_tokens);
    for (const entry of content) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.top_logprobs).toHaveLength(5);
      const values = entry.top_logprobs.map((e) => e.logprob);
      expect([...values].sort((a, b) => b - a)).toEqual(values);
      expect(values.reduce((s, v) => s + Math.exp(v), 0)).toBeLessThanOrEqual(1 + 1e-6);
      // Greedy draws the most likely token.
      expect(entry.top_logprobs[0].token).toBe(entry.token);
      expect(entry.top_logprobs[0].logprob).toBeCloseTo(entry.logprob, 5);
    }
  });

  it('reads an image part', async () => {
    const answer = await t().client.chat.completions.create({
      model: 'm',
      messages: t().image,
      temperature: 0,
      max_tokens: 8,
    });
    expect(answer.choices[0].message.content?.length).toBeGreaterThan(0);
    expect(answer.usage!.prompt_tokens).toBeGreaterThan(0);
  });
});

describe('@huggingface/inference against metrl serve', () => {
  it.each([0, 1])('chatCompletion and chatCompletionStream, given only the endpoint URL (%#)', async (k) => {
    const t = targets[k];
    const messages = t.text as { role: 'user'; content: string }[];
    const plain = await chatCompletion({ endpointUrl: t.served.url, messages, temperature: 0, max_tokens: 10 });
    const streamed: string[] = [];
    for await (const chunk of chatCompletionStream({
      endpointUrl: t.served.url,
      messages,
      temperature: 0,
      max_tokens: 10,
    }))
      streamed.push(chunk.choices[0]?.delta.content ?? '');
    expect(streamed.join('')).toBe(plain.choices[0].message.content);
  });
});

describe('the built-in model decoded in rounds', () => {
  it('gives the in-process one-shot greedy answer token for token', async () => {
    const { policy } = await loadPolicy(BASE, { backend: 'wasm' });
    const prompt = await policy.chatPrompt(builtinImage);
    const [local] = policy.sampleGroup(prompt, 1, { temperature: 0, topP: 1, maxNewTokens: 200 }, new Rng(0, 'x'));
    policy.dispose();
    const served = await targets[0].client.chat.completions.create({
      model: 'm',
      messages: builtinImage as Messages,
      temperature: 0,
      max_tokens: 200,
      logprobs: true,
    });
    // A trace of three actions is more than the first two rounds (16 + 32 tokens).
    expect(local.tokens.length).toBeGreaterThan(48);
    expect(served.choices[0].message.content).toBe(local.text);
    expect(served.usage!.completion_tokens).toBe(local.tokens.length);
  });
});
