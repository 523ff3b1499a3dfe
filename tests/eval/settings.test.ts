// Settings expansion and its rules, model descriptions (no secrets), perception scoring, Retry-After parsing and
// backoff, and the baselines' answers: the pure parts of the harness.
import { describe, expect, it, vi } from 'vitest';
import { shellEnv } from '../../envs/shell/index.ts';
import { chessEnv } from '../../envs/chess/index.ts';
import type { Domain } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import { Rng } from '../../core/rng.ts';
import { UserError } from '../../core/errors.ts';
import { expandSettings, parseNumberList, settingKey, type SettingOptions } from '../../eval/settings.ts';
import { describeModel } from '../../eval/sources/index.ts';
import { baselineSource } from '../../eval/sources/baseline.ts';
import { scatteredFen } from '../../envs/chess/baseline.ts';
import { parseAction, scorePerception } from '../../eval/perception.ts';
import { backoffDelay, kindOfStatus, parseRetryAfter, DEFAULT_RETRY } from '../../eval/retry.ts';
import { drawSelection, itemsOf } from '../../eval/selection.ts';

const envs = new Map<Domain, Env>([
  ['shell', shellEnv],
  ['chess', chessEnv],
]);
const options = (o: Partial<SettingOptions>): SettingOptions => ({
  domains: ['shell'],
  modalities: null,
  imageRatios: null,
  actions: [10],
  prompts: ['zero-shot'],
  shots: null,
  task: 'track',
  cascade: false,
  ...o,
});

describe('settings', () => {
  it('expands comma lists into every combination, with sweeps as their own settings', () => {
    const s = expandSettings(
      options({
        domains: ['shell', 'chess'],
        modalities: ['text', 'image'],
        prompts: ['zero-shot', 'few-shot', 'cot'],
      }),
      envs,
    );
    expect(s).toHaveLength(12);
    expect(s.find((x) => x.prompt === 'few-shot')!.shots).toBe(5);
    expect(new Set(s.map(settingKey)).size).toBe(12);
    const sweep = expandSettings(options({ imageRatios: [0, 0.25, 0.5, 0.75, 1] }), envs);
    expect(sweep.map((x) => [x.modality, x.imageRatio])).toEqual([
      ['mixed', 0],
      ['mixed', 0.25],
      ['mixed', 0.5],
      ['mixed', 0.75],
      ['mixed', 1],
    ]);
    expect(settingKey(sweep[1])).toBe('shell/mixed/p0.25/T10/zero-shot');
    expect(expandSettings(options({ actions: [0, 5, 10, 20] }), envs).map((x) => x.actions)).toEqual([0, 5, 10, 20]);
  });

  it('enforces the rules that tie options together', () => {
    const bad: Array<[Partial<SettingOptions>, RegExp]> = [
      [{ prompts: ['fen-trace'] }, /shell has no style 'fen-trace'/],
      [{ cascade: true }, /--cascade transcribes image actions/],
      [{ cascade: true, modalities: ['image'], task: 'perception' }, /--cascade applies to tracking/],
      [{ task: 'perception', modalities: ['text'] }, /perception reads image actions/],
      [{ imageRatios: [0.5], modalities: ['text'] }, /--image-ratio applies to --modality mixed/],
      [{ shots: 3 }, /--shots applies to --prompt few-shot/],
      [{ task: 'perception', actions: [0] }, /at least one action/],
    ];
    for (const [o, pattern] of bad) expect(() => expandSettings(options(o), envs), pattern.source).toThrow(pattern);
    expect(() => expandSettings(options({ prompts: ['cot'] }), envs, 'compact')).toThrow(/only its own prompt layout/);
    expect(expandSettings(options({ prompts: ['compact'] }), envs, 'compact')[0].prompt).toBe('compact');
  });

  it('parses number lists and names the bad entry', () => {
    expect(parseNumberList('actions', '0,5, 10,5', (v) => v >= 0, 'n')).toEqual([0, 5, 10]);
    expect(() => parseNumberList('actions', '5,,6', (v) => v >= 0, 'a count')).toThrow("--actions: '' is not a count");
  });
});

describe('episode selection', () => {
  it('never evaluates the same problem twice, and evaluates all there are, with a warning, when too few exist', () => {
    // The shell game with 3 swaps has 81 episodes, about a fifth of them in the test split; draws repeat them.
    const settings = expandSettings(options({ actions: [3] }), envs);
    const selection = drawSelection(settings, envs, 10, 0, {} as Record<Domain, Record<string, unknown>>);
    const episodes = itemsOf(settings[0], selection, 10, 0).map((i) => i.episode);
    expect(new Set(episodes.map((e) => `${e.initialState}|${e.actions.map((a) => a.text).join(',')}`)).size).toBe(10);
    // Asked for more than exist: every distinct one is evaluated, with a warning naming how many there are.
    const warnings: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (warnings.push(String(chunk)), true));
    try {
      const few = drawSelection(settings, envs, 40, 0, {} as Record<Domain, Record<string, unknown>>);
      const all = itemsOf(settings[0], few, 40, 0).map((i) => i.episode);
      expect(all.length).toBeGreaterThanOrEqual(10);
      expect(all.length).toBeLessThan(40);
      expect(new Set(all.map((e) => `${e.initialState}|${e.actions.map((a) => a.text).join(',')}`)).size).toBe(
        all.length,
      );
    } finally {
      spy.mockRestore();
    }
    expect(warnings.join('')).toMatch(/shell\/text\/T3: only \d+ distinct test episodes exist \(asked for 40\)/);
  });
});

describe('model sources from the command line', () => {
  it('records the key variable, never a key', () => {
    expect(describeModel({ model: 'org/m', provider: 'together' })).toEqual({
      kind: 'hosted',
      id: 'org/m',
      provider: 'together',
      api_key_env: 'HF_TOKEN',
    });
    expect(describeModel({ model: 'org/m' })).toMatchObject({ provider: 'auto' });
    expect(describeModel({ model: 'm', endpoint: 'http://127.0.0.1:8000/v1' })).toEqual({
      kind: 'hosted',
      id: 'm',
      endpoint: 'http://127.0.0.1:8000/v1',
    });
    expect(describeModel({ model: 'baseline:random' })).toEqual({ kind: 'baseline', name: 'random' });
    expect(describeModel({ checkpoint: 'runs/x' })).toEqual({ kind: 'checkpoint', path: 'runs/x' });
  });

  it('rejects contradictory or unsafe model options', () => {
    expect(() => describeModel({})).toThrow(/name a model/);
    expect(() => describeModel({ model: 'm', provider: 'p', endpoint: 'http://x' })).toThrow(
      /either --provider or --endpoint/,
    );
    expect(() => describeModel({ checkpoint: 'a', model: 'm' })).toThrow(/not both/);
    expect(() => describeModel({ model: 'baseline:oracle' })).toThrow(/unknown baseline 'oracle'/);
    expect(() => describeModel({ model: 'm', endpoint: 'http://user:key@host/v1' })).toThrow(/not in the URL/);
    expect(() => describeModel({ model: 'm', endpoint: 'ftp://x' })).toThrow(/needs http/);
    expect(() => describeModel({ model: 'm', provider: 'nowhere-ai' })).toThrow(/unknown provider 'nowhere-ai'/);
    expect(() => describeModel({ model: 'm', base: 'b' })).toThrow(/--base applies to --checkpoint/);
  });
});

describe('perception scoring', () => {
  it('reads one action of the right form, exact match on its text', () => {
    expect(scorePerception(chessEnv, 'e2e4', 'e2e4').reward).toBe(1);
    expect(scorePerception(chessEnv, '`E2E4`.', 'e2e4').reward).toBe(1);
    expect(scorePerception(chessEnv, 'FINAL ANSWER: a7a8q', 'a7a8q').reward).toBe(1);
    expect(scorePerception(chessEnv, 'a7a8', 'a7a8q')).toMatchObject({ reward: 0, valid: true });
    expect(scorePerception(chessEnv, 'e2e4 or e2e3', 'e2e4')).toMatchObject({ reward: 0, valid: false });
    expect(scorePerception(shellEnv, '1 swap 3', '1 swap 3').reward).toBe(1);
    expect(scorePerception(shellEnv, '3 swap 1', '1 swap 3').reward).toBe(1); // a swap is an unordered pair
    expect(scorePerception(shellEnv, '1-3', '1 swap 3').reward).toBe(1);
    expect(scorePerception(shellEnv, '2 swap 2', '1 swap 3').valid).toBe(false);
    expect(parseAction(shellEnv, 'I think 1 and 4')).toBeNull();
  });

  it("asks the environment for the action's form, and takes the cleaned answer as written where it has none", () => {
    const noReader: Env = { ...shellEnv, readPerceptionAnswer: undefined };
    expect(parseAction(noReader, 'FINAL ANSWER: **3 and 1**.')).toBe('3 and 1');
    expect(parseAction(noReader, '  \n ')).toBeNull();
    expect(scorePerception(noReader, '3 swap 1', '1 swap 3').reward).toBe(0);
    expect(parseAction(shellEnv, 'FINAL ANSWER: **3 and 1**.')).toBe('1 swap 3');
  });
});

describe('retries', () => {
  it('classifies statuses', () => {
    // The MET-Bench harness stops the run on 400 and 402 as well (a parameter a reasoning model refuses, no credit).
    expect([400, 401, 402, 403, 404].map(kindOfStatus)).toEqual(['fatal', 'fatal', 'fatal', 'fatal', 'fatal']);
    expect([429, 500, 502, 503, 408].map(kindOfStatus)).toEqual([
      'retryable',
      'retryable',
      'retryable',
      'retryable',
      'retryable',
    ]);
    expect([422, 409].map(kindOfStatus)).toEqual(['item', 'item']);
  });

  it('reads Retry-After as seconds or a date, and prefers it to backoff', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(new Date(Date.now() + 5000).toUTCString(), Date.now())).toBeGreaterThan(3500);
    expect(parseRetryAfter('soon')).toBeNull();
    const rng = new Rng(1);
    expect(backoffDelay(DEFAULT_RETRY, 0, 2500, rng)).toBe(2500);
    const delays = [0, 1, 2, 3].map((a) => backoffDelay(DEFAULT_RETRY, a, null, rng));
    delays.forEach((d, a) => {
      expect(d).toBeGreaterThanOrEqual(500 * 2 ** a);
      expect(d).toBeLessThan(1000 * 2 ** a);
    });
  });
});

describe('baselines', () => {
  it('game start answers the initial state, random answers of the right form, seeded', async () => {
    const settings = expandSettings(options({ domains: ['chess'], actions: [4] }), envs);
    const selection = drawSelection(settings, envs, 5, 0, {} as Record<Domain, Record<string, unknown>>);
    const [item] = itemsOf(settings[0], selection, 5, 0);
    const signal = new AbortController().signal;
    const start = await baselineSource('game-start', 0).complete(
      { kind: 'track', episode: item.episode, style: 'zero-shot', shots: [] },
      signal,
    );
    expect(start.text).toBe(`FINAL ANSWER: ${item.episode.initialState}`);
    const random = baselineSource('random', 0);
    const a = await random.complete({ kind: 'track', episode: item.episode, style: 'zero-shot', shots: [] }, signal);
    const b = await random.complete({ kind: 'track', episode: item.episode, style: 'zero-shot', shots: [] }, signal);
    expect(a.text).toBe(b.text);
    expect(
      chessEnv.score({ target: item.target, response: a.text, initialState: item.episode.initialState }).valid,
    ).toBe(true);
    const fen = scatteredFen('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1', new Rng(2));
    expect(fen.split(' ')[0].replace(/[\d/]/g, '').split('').sort().join('')).toBe('BBKNNPPPPPPPPQRRbbknnppppppppqrr');
    const perception = await random.complete(
      { kind: 'perception', episode: item.episode, index: 0, style: 'zero-shot' },
      signal,
    );
    expect(parseAction(chessEnv, perception.text)).not.toBeNull();
    await expect(
      baselineSource('game-start', 0).complete(
        { kind: 'perception', episode: item.episode, index: 0, style: 'zero-shot' },
        signal,
      ),
    ).rejects.toThrow(UserError);
    // Shell perception: a random swap of the right form, scored as the random baseline it is (about 1 in 3).
    const shellSettings = expandSettings(options({ task: 'perception', actions: [5] }), envs);
    const shellItems = itemsOf(
      shellSettings[0],
      drawSelection(shellSettings, envs, 300, 0, {} as Record<Domain, Record<string, unknown>>),
      300,
      0,
    );
    let correct = 0;
    for (const it of shellItems) {
      const reply = await random.complete(
        { kind: 'perception', episode: it.episode, index: it.actionIndex!, style: 'zero-shot' },
        signal,
      );
      const score = scorePerception(shellEnv, reply.text, it.target);
      expect(score.valid).toBe(true);
      correct += score.reward;
    }
    expect(correct / shellItems.length).toBeGreaterThan(0.25);
    expect(correct / shellItems.length).toBeLessThan(0.42);
  });
});
