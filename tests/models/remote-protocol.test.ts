// The rollout client's protocol files against vLLM's and SGLang's documented shapes (tests/fixtures/rollout/): the
// requests it builds carry exactly the fixture's fields, and it reads exactly the fixture responses' fields; a
// response without token ids or log-probs is named. (No vLLM or SGLang server runs here: protocol only.)
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  parseVllmChat,
  parseVllmCompletions,
  vllmChatRequest,
  vllmCompletionRequest,
  vllmLoadAdapterRequest,
} from '../../models/remote/vllm-protocol.ts';
import { parseSglangGenerate, sglangGenerateRequest } from '../../models/remote/sglang-protocol.ts';
import { serverRoot } from '../../models/remote/rollout-pool.ts';

const fixture = (name: string) =>
  JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'rollout', name), 'utf8'));
const sampling = { temperature: 0.5, topP: 1, maxNewTokens: 3 };

describe('vLLM dialect', () => {
  it('builds the documented /v1/completions and /v1/load_lora_adapter requests', () => {
    expect(vllmCompletionRequest('metrl-policy', [1, 40, 41, 10], 2, sampling, 12345)).toEqual(
      fixture('vllm-completions-request.json'),
    );
    expect(vllmLoadAdapterRequest('/shared/run/rollout-adapters/v3')).toEqual(fixture('vllm-load-lora-request.json'));
  });

  it("adds vLLM's and SGLang's top_k and min_p only when the run sets them", () => {
    const truncated = { ...sampling, topK: 20, minP: 0.05 };
    expect(vllmCompletionRequest('metrl-policy', [1], 2, truncated, 1)).toEqual({
      ...fixture('vllm-completions-request.json'),
      prompt: [1],
      seed: 1,
      top_k: 20,
      min_p: 0.05,
    });
    const sglang = sglangGenerateRequest('metrl-v3', [1], 2, truncated, 1) as { sampling_params: object };
    expect(sglang.sampling_params).toMatchObject({ top_k: 20, min_p: 0.05 });
    expect(Object.keys(vllmCompletionRequest('metrl-policy', [1], 2, sampling, 1))).not.toContain('top_k');
  });

  it('reads token_ids, logprobs.token_logprobs, text and finish_reason', () => {
    const parsed = parseVllmCompletions(fixture('vllm-completions-response.json'), 2);
    if (typeof parsed === 'string') throw new Error(parsed);
    expect(parsed.map((c) => c.tokens)).toEqual([
      [50, 51, 2],
      [50, 51, 52],
    ]);
    expect(parsed.map((c) => Array.from(c.logProbs))).toEqual([
      [-0.25, -1.5, -0.125],
      [-0.25, -0.5, -2],
    ]);
    expect(parsed.map((c) => [c.text, c.finished])).toEqual([
      ['ab', true],
      ['abc', false],
    ]);
  });

  it('names what a response lacks', () => {
    const body = fixture('vllm-completions-response.json');
    delete body.choices[1].token_ids;
    expect(parseVllmCompletions(body, 2)).toMatch(/choices\.1\.token_ids: no token_ids/);
    expect(parseVllmCompletions(fixture('vllm-completions-response.json'), 3)).toBe('2 choices for n = 3');
  });

  it('builds the documented /v1/chat/completions request for an image prompt', () => {
    const request = fixture('vllm-chat-completions-request.json');
    expect(vllmChatRequest('metrl-policy', request.messages, 2, sampling, 12345)).toEqual(request);
  });

  it('reads prompt_token_ids, choices[i].token_ids and logprobs.content[j].logprob of a chat answer', () => {
    const parsed = parseVllmChat(fixture('vllm-chat-completions-response.json'), 2);
    if (typeof parsed === 'string') throw new Error(parsed);
    expect(parsed.promptTokenIds).toEqual([1, 40, 41, 3, 3, 10, 42]);
    expect(parsed.completions.map((c) => c.tokens)).toEqual([
      [50, 51, 2],
      [50, 51, 52],
    ]);
    expect(parsed.completions.map((c) => Array.from(c.logProbs))).toEqual([
      [-0.25, -1.5, -0.125],
      [-0.25, -0.5, -2],
    ]);
    expect(parsed.completions.map((c) => [c.text, c.finished])).toEqual([
      ['ab', true],
      ['abc', false],
    ]);
    const without = fixture('vllm-chat-completions-response.json');
    delete without.prompt_token_ids;
    expect((parseVllmChat(without, 2) as { promptTokenIds: unknown }).promptTokenIds).toBeNull();
  });

  it('names what a chat answer lacks', () => {
    const noIds = fixture('vllm-chat-completions-response.json');
    delete noIds.choices[0].token_ids;
    expect(parseVllmChat(noIds, 2)).toMatch(
      /^choices\.0\.token_ids: no token_ids \(the server must support the request field return_token_ids/,
    );
    const noLogprobs = fixture('vllm-chat-completions-response.json');
    noLogprobs.choices[1].logprobs = null;
    expect(parseVllmChat(noLogprobs, 2)).toMatch(
      /^choices\.1\.logprobs: no logprobs\.content \(the request asked for logprobs: true\)/,
    );
    const short = fixture('vllm-chat-completions-response.json');
    short.choices[0].logprobs.content.pop();
    expect(parseVllmChat(short, 2)).toBe('choice 0: 2 logprobs.content entries for 3 token_ids');
  });

  it('takes a URL with or without /v1', () => {
    expect(serverRoot('http://127.0.0.1:8000/v1/')).toBe('http://127.0.0.1:8000');
    expect(serverRoot('http://127.0.0.1:8000')).toBe('http://127.0.0.1:8000');
  });
});

describe('SGLang dialect', () => {
  it('builds the documented /generate request and reads meta_info.output_token_logprobs', () => {
    expect(sglangGenerateRequest('metrl-v3', [1, 40, 41, 10], 2, sampling, 12345)).toEqual(
      fixture('sglang-generate-request.json'),
    );
    const parsed = parseSglangGenerate(fixture('sglang-generate-response.json'), 2);
    if (typeof parsed === 'string') throw new Error(parsed);
    expect(parsed.completions.map((c) => c.tokens)).toEqual([
      [50, 51, 2],
      [50, 51, 52],
    ]);
    expect(parsed.completions.map((c) => Array.from(c.logProbs))).toEqual([
      [-0.25, -1.5, -0.125],
      [-0.25, -0.5, -2],
    ]);
    expect(parsed.completions.map((c) => c.finished)).toEqual([true, false]);
    expect(parsed.promptTokens).toBe(4);
  });

  it('sends an image prompt as input_ids with image_data, one list of data URLs per prompt', () => {
    const request = fixture('sglang-generate-image-request.json');
    expect(sglangGenerateRequest('metrl-v3', request.input_ids[0], 2, sampling, 12345, request.image_data[0])).toEqual(
      request,
    );
  });
});
