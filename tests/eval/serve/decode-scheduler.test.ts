// metrl serve's decoding rounds (eval/serve/decode-scheduler.ts) around a scripted sampler: a long answer decoded over
// several rounds, each continuing from the prompt and what was written, is exactly the script; a stop string ends a
// choice before it (finish_reason stop, tokens through the one that completed it), also when it spans two rounds, and
// what is streamed before the end never holds part of it; a request whose client hung up is decoded no further;
// waiting requests get room first come first served, and past the bound ServerBusy.
import { describe, expect, it } from 'vitest';
import { ClientGone, DecodeScheduler, ServerBusy, type DecodeRequest } from '../../../eval/serve/decode-scheduler.ts';
import { EOS, scriptedSampler } from '../../helpers/scripted-sampler.ts';

const PROMPT = { tokens: [1, 2, 3], images: [] };
const base = (over: Partial<DecodeRequest> = {}): DecodeRequest => ({
  prompt: PROMPT,
  temperature: 0,
  topP: 1,
  maxTokens: 200,
  n: 1,
  seed: null,
  stop: [],
  topLogProbs: 0,
  ...over,
});

// 130 characters then EOS: more than the first rounds (16, 32, 64 tokens) hold.
const SCRIPT = `${'abcdefghij'.repeat(6)}STOP-HERE${'klmnopqrst'.repeat(6)}ZZ$`;
const ANSWER = SCRIPT.slice(0, -1);

describe('DecodeScheduler', () => {
  it('decodes a long answer over several rounds, each continued from what was written: the script exactly', async () => {
    const sampler = scriptedSampler(SCRIPT, PROMPT.tokens.length);
    const scheduler = new DecodeScheduler(() => sampler, 0);
    const [choice] = await scheduler.decode(base());
    expect(choice.text).toBe(ANSWER);
    expect(choice.tokens).toHaveLength(SCRIPT.length);
    expect(choice.tokens.at(-1)).toBe(EOS);
    expect(choice.finishReason).toBe('stop');
    expect(choice.stopReason).toBeNull();
    // Rounds of 16, 32, 64, then the rest; each later one prefilled the prompt and the tokens written.
    expect(sampler.calls.map((c) => [c.prompts[0], c.maxNewTokens])).toEqual([
      [3, 16],
      [19, 32],
      [51, 64],
      [115, 64],
    ]);
  });

  it('ends at max tokens with finish_reason length, and gives n choices from one prefill', async () => {
    const sampler = scriptedSampler(SCRIPT, PROMPT.tokens.length);
    const scheduler = new DecodeScheduler(() => sampler, 0);
    const choices = await scheduler.decode(base({ maxTokens: 40, n: 3 }));
    expect(choices.map((c) => c.text)).toEqual([0, 1, 2].map((g) => SCRIPT.slice(g, g + 40)));
    expect(choices.every((c) => c.finishReason === 'length' && c.tokens.length === 40)).toBe(true);
    expect(sampler.calls[0]).toEqual({ prompts: [3], group: 3, maxNewTokens: 16 });
    // The second round continues each choice on its own.
    expect(sampler.calls[1]).toEqual({ prompts: [19, 19, 19], group: 1, maxNewTokens: 24 });
  });

  it('cuts before a stop string that spans two rounds, and never streams part of it', async () => {
    const sampler = scriptedSampler(SCRIPT, PROMPT.tokens.length);
    const scheduler = new DecodeScheduler(() => sampler, 0);
    const streamed: string[] = [];
    // "jSTOP-HERE" is characters 59-68: the second round (tokens 16-47) does not reach it, the third (48-111) holds it.
    const [choice] = await scheduler.decode(
      base({ stop: ['nowhere', 'jSTOP-HERE'], onProgress: (c) => streamed.push(c[0].text) }),
    );
    expect(choice.text).toBe(SCRIPT.slice(0, 59));
    expect(choice.finishReason).toBe('stop');
    expect(choice.stopReason).toBe('jSTOP-HERE');
    // Through the token that completed the stop string (character 68), none after it.
    expect(choice.tokens).toHaveLength(69);
    expect(choice.logProbs).toHaveLength(69);
    for (const text of streamed) expect(choice.text.startsWith(text)).toBe(true);
    expect(streamed.at(-1)).toBe(choice.text);
  });

  it('holds back a tail that could begin a stop string until it is known not to', async () => {
    // The first round (16 tokens) ends in "…ab" and the stop string is "abX": the tail "ab" waits; the next round
    // writes "cd…", so it was not one.
    const sampler = scriptedSampler(`0123456789abcdab${'cdefghijklmnopqrstuvwxyz'.repeat(3)}$`, 3);
    const scheduler = new DecodeScheduler(() => sampler, 0);
    const seen: string[] = [];
    const [choice] = await scheduler.decode(
      base({ maxTokens: 30, stop: ['abX'], onProgress: (c) => seen.push(c[0].text) }),
    );
    expect(seen).toEqual(['0123456789abcd', '0123456789abcdabcdefghijklmnop']);
    expect(choice.finishReason).toBe('length');
  });

  it('decodes a request whose client hung up no further, and rejects it with ClientGone', async () => {
    const controller = new AbortController();
    let calls = 0;
    const sampler = scriptedSampler(SCRIPT, PROMPT.tokens.length, () => {
      if (++calls === 2) controller.abort();
    });
    const scheduler = new DecodeScheduler(() => sampler, 0);
    const gone = scheduler.decode(base({ maxTokens: 200, n: 4, signal: controller.signal }));
    const other = scheduler.decode(base({ maxTokens: 20 }));
    await expect(gone).rejects.toBeInstanceOf(ClientGone);
    expect((await other)[0].text).toBe(SCRIPT.slice(0, 20));
    // Round 1: both requests (two calls: n 4 and n 1); round 2 would continue four choices of the one that left.
    const rowsAfter = sampler.calls.slice(2).reduce((s, c) => s + c.prompts.length * c.group, 0);
    expect(rowsAfter).toBe(1);
    await expect(scheduler.decode(base({ signal: AbortSignal.abort() }))).rejects.toBeInstanceOf(ClientGone);
  });

  it('lets waiting requests in first come first served as rows free up, and refuses one past the waiting bound', async () => {
    const sampler = scriptedSampler(SCRIPT, PROMPT.tokens.length);
    const scheduler = new DecodeScheduler(() => sampler, 0, { maxRows: 4, maxWaiting: 3 });
    const first = scheduler.decode(base({ n: 4, maxTokens: 20 }));
    const second = scheduler.decode(base({ n: 2, maxTokens: 10 }));
    const third = scheduler.decode(base({ n: 2, maxTokens: 10 }));
    await expect(scheduler.decode(base())).rejects.toBeInstanceOf(ServerBusy);
    const done: number[] = [];
    await Promise.all([first, second, third].map((p, i) => p.then(() => done.push(i))));
    // The second and third could not start beside the first's four rows; they then decoded together.
    expect(done).toEqual([0, 1, 2]);
    expect(sampler.calls[0]).toEqual({ prompts: [3], group: 4, maxNewTokens: 16 });
    expect(sampler.calls.slice(2).some((c) => c.prompts.length === 2 && c.group === 2)).toBe(true);
  });

  it('decodes a request with a seed in calls of its own', async () => {
    const sampler = scriptedSampler(SCRIPT, PROMPT.tokens.length);
    const scheduler = new DecodeScheduler(() => sampler, 0);
    await Promise.all([
      scheduler.decode(base({ maxTokens: 8, temperature: 1 })),
      scheduler.decode(base({ maxTokens: 8, temperature: 1 })),
      scheduler.decode(base({ maxTokens: 8, temperature: 1, seed: 3 })),
    ]);
    expect(sampler.calls.map((c) => c.prompts.length).sort()).toEqual([1, 2]);
  });
});
