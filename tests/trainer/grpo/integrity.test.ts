// The integrity checks of every step (trainer/grpo/integrity.ts), each broken on purpose: a sampler whose log-probs
// drift from the learner's, one whose completions change after it returned them, one whose prompt pixels or image
// tokens change after it sampled, and a rollout server sent other images than the learner scores. Each stops the run
// with one line naming the step, the prompt and the gap, before the step's update, so the run keeps its step-0
// checkpoint. The default run passes them, its sampler and learner log-probs equal to rounding. The pure parts are
// pinned to hand-computed numbers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../../models/backend.ts';
import { loadTrainingPolicy, train } from '../../../trainer/grpo/loop.ts';
import { resolveConfig, type TrainConfig } from '../../../trainer/config.ts';
import { shellEnv } from '../../../envs/shell/index.ts';
import { checkLearnerBatch, LogpDifference, recordRound } from '../../../trainer/grpo/integrity.ts';
import type { Policy } from '../../../models/policy.ts';
import type { ChatMessage } from '../../../core/chat.ts';
import type { Completion, EncodedPrompt } from '../../../models/types.ts';
import { UserError } from '../../../core/errors.ts';
import { tinyBaseCheckpoint } from '../tiny-base.ts';
import { startServe, type Served } from '../../helpers/serve-process.ts';
import { killGroup } from '../../helpers/tracked-children.ts';

const base = tinyBaseCheckpoint();
const settings = {
  trainSize: 8,
  actions: 2,
  testSize: 4,
  steps: 3,
  promptsPerStep: 2,
  groupSize: 4,
  evalEvery: 3,
  checkpointEvery: 1,
  maxCompletionTokens: 3,
  learningRate: 0.05,
  temperature: 1,
};

type Breakage = (prompts: EncodedPrompt[], groups: Completion[][]) => void;

/**
 * The tiny policy with a broken sampleGroups: `now` edits what it returns, `later` edits it once it has returned (a
 * microtask: before the learner runs, after the trainer has the completions).
 */
function broken(policy: Policy, breakage: { now?: Breakage; later?: Breakage }): Policy {
  return new Proxy(policy, {
    get(target, key) {
      if (key === 'sampleGroups')
        return (...args: Parameters<Policy['sampleGroups']>) => {
          const groups = target.sampleGroups(...args);
          breakage.now?.(args[0], groups);
          if (breakage.later) queueMicrotask(() => breakage.later!(args[0], groups));
          return groups;
        };
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function run(config: TrainConfig, wrap: (p: Policy) => Policy = (p) => p) {
  const runDir = mkdtempSync(join(tmpdir(), 'metrl-integrity-'));
  const setup = await loadTrainingPolicy(base, config);
  const result = train({
    env: shellEnv,
    ...setup,
    policy: wrap(setup.policy),
    config,
    modality: 'image',
    runDir,
    resume: false,
  }).then(
    () => null,
    (error: unknown) => error,
  );
  return { runDir, error: await result };
}

/** The run stopped with one UserError line matching `pattern`, and kept its step-0 checkpoint. */
function expectStopped({ runDir, error }: { runDir: string; error: unknown }, pattern: RegExp) {
  expect(error).toBeInstanceOf(UserError);
  const message = (error as Error).message;
  expect(message).not.toContain('\n');
  expect(message).toMatch(/^integrity check, step 1, prompt shell-train-\S+: /);
  expect(message).toMatch(pattern);
  expect(message).toMatch(/the step was not applied, the last checkpoint is kept/);
  expect(readFileSync(join(runDir, 'checkpoints', 'latest'), 'utf8').trim()).toBe('step-0');
}

const tfjs = resolveConfig({}, { ...settings, engine: 'tfjs' });

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe('integrity checks, broken on purpose', () => {
  it('log-probs that drift: the sampler records them 0.7 nats off', async () => {
    const drift: Breakage = (_, groups) => {
      for (const c of groups.flat()) c.samplingLogProbs = c.samplingLogProbs!.map((x) => x - 0.7);
    };
    expectStopped(
      await run(tfjs, (p) => broken(p, { now: drift })),
      /the sampler's log-probs differ from the learner's by 0\.700 nats per token on average \(threshold 0\.5, --logp-difference-threshold\)/,
    );
    // Past a higher threshold the same sampler trains on (and the gap is logged).
    const tolerant = resolveConfig({}, { ...settings, engine: 'tfjs', steps: 1, logpDifferenceThreshold: 0.8 });
    const { runDir, error } = await run(tolerant, (p) => broken(p, { now: drift }));
    expect(error).toBeNull();
    const row = readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((r) => r.type === 'train');
    expect(row.trl['sampling/sampling_logp_difference/mean']).toBeCloseTo(0.7, 5);
  });

  it('a sampler that returns other tokens than the learner scores: its completions change after it returned them', async () => {
    const later: Breakage = (_, groups) => {
      for (const c of groups.flat()) c.tokens[0] = c.tokens[0] === 5 ? 6 : 5;
    };
    expectStopped(
      await run(tfjs, (p) => broken(p, { later })),
      /the learner scores a completion of 3 tokens \(sha256 [0-9a-f]{16}\) that is not the sampler's \(3 tokens, [0-9a-f]{16}\)/,
    );
  });

  it("other pixels: the prompt's image changes after the sampler drew from it", async () => {
    // (The evaluation's text prompts have no image to change.)
    const later: Breakage = (prompts) => {
      if (prompts[0].images.length > 0) prompts[0].images[0][0] += 0.5;
    };
    expectStopped(
      await run(tfjs, (p) => broken(p, { later })),
      /the learner's image pixels \(sha256 [0-9a-f]{16}\) are not the sampler's \([0-9a-f]{16}\)/,
    );
  });

  it('other image-token counts: an image position of the prompt becomes text after the sampler drew from it', async () => {
    let counts = '';
    const later = (policy: Policy) => (prompts: EncodedPrompt[]) => {
      if (prompts[0].images.length === 0) return;
      const tokens = prompts[0].tokens;
      const before = tokens.filter((t) => t === policy.imageTokenId).length;
      tokens[tokens.indexOf(policy.imageTokenId!)] = policy.encode([{ type: 'text', text: 'a' }]).tokens.at(-1)!;
      counts = `has ${before - 1} image tokens, the sampler's ${before}`;
    };
    const result = await run(tfjs, (p) => broken(p, { later: later(p) }));
    expectStopped(result, /the learner's prompt has \d+ image tokens, the sampler's \d+/);
    expect((result.error as Error).message).toContain(counts);
  });

  it('passes the default run (ONNX Runtime samples, tfjs variables learn): sampler and learner agree to rounding', async () => {
    const { runDir, error } = await run(resolveConfig({}, settings));
    expect(error).toBeNull();
    const rows = readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((r) => r.type === 'train');
    expect(rows.map((r) => r.step)).toEqual([1, 2, 3]);
    for (const r of rows) {
      expect(r.trl['sampling/sampling_logp_difference/mean']).toBeGreaterThanOrEqual(0);
      expect(r.trl['sampling/sampling_logp_difference/max']).toBeLessThan(1e-4);
    }
  });
});

describe('integrity check of what a rollout server was sent', () => {
  let served: Served;
  beforeAll(async () => {
    served = await startServe(['--checkpoint', base, '--port', '0', '--backend', 'wasm', '--enable-lora']);
  }, 60_000);
  afterAll(() => killGroup(served.child));

  it('a server sent the images in another order than the learner scores them', async () => {
    const swapped = (policy: Policy): Policy =>
      new Proxy(policy, {
        get(target, key) {
          if (key === 'promptMessages')
            return async (...args: Parameters<Policy['promptMessages']>): Promise<ChatMessage[]> =>
              (await target.promptMessages(...args)).map((m) => {
                if (typeof m.content === 'string') return m;
                const images = m.content.filter((p) => p.type === 'image_url').reverse();
                return { ...m, content: m.content.map((p) => (p.type === 'image_url' ? images.shift()! : p)) };
              });
          const value = Reflect.get(target, key, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const remote = resolveConfig({}, { ...settings, engine: 'tfjs', rolloutServer: [served.url] });
    expectStopped(await run(remote, swapped), /the learner's image pixels .* are not the sampler's/);
  }, 60_000);
});

describe('the checks, by hand', () => {
  const prompt = (tokens: number[], pixels: number[]): EncodedPrompt => ({
    tokens,
    images: [Float32Array.from(pixels)],
  });
  const completion = (tokens: number[], logProbs: number[]): Completion => ({
    tokens,
    text: '',
    logProbs: Float32Array.from(logProbs),
    samplingLogProbs: Float32Array.from(logProbs),
    finished: true,
  });

  it('compares image tokens, images, pixels, prompt tokens, completion tokens and log-prob counts', () => {
    const p = prompt([1, 9, 9, 4], [0.25, 0.5]);
    const records = recordRound([p], [[completion([7, 8], [-1, -2])]], 9).flat();
    const ok = () => checkLearnerBatch(3, [{ prompt: p, completion: [7, 8] }], records, 9, () => 'e1');
    expect(ok).not.toThrow();
    const check = (seq: { prompt: EncodedPrompt; completion: number[] }) => () =>
      checkLearnerBatch(3, [seq], records, 9, () => 'e1');
    expect(check({ prompt: prompt([1, 9, 5, 4], [0.25, 0.5]), completion: [7, 8] })).toThrow(
      /^integrity check, step 3, prompt e1: the learner's prompt has 1 image tokens, the sampler's 2;/,
    );
    expect(check({ prompt: { tokens: [1, 9, 9, 4], images: [] }, completion: [7, 8] })).toThrow(
      /the learner's prompt has 0 images, the sampler's 1/,
    );
    expect(check({ prompt: prompt([1, 9, 9, 4], [0.25, 0.75]), completion: [7, 8] })).toThrow(
      /the learner's image pixels .* are not the sampler's/,
    );
    expect(check({ prompt: prompt([2, 9, 9, 4], [0.25, 0.5]), completion: [7, 8] })).toThrow(
      /the learner's prompt tokens \(4, sha256 [0-9a-f]{16}\) are not the sampler's \(4, [0-9a-f]{16}\)/,
    );
    expect(check({ prompt: p, completion: [7, 8, 2] })).toThrow(/the learner scores a completion of 3 tokens/);
    const short = recordRound([p], [[completion([7, 8], [-1])]], 9).flat();
    expect(() => checkLearnerBatch(3, [{ prompt: p, completion: [7, 8] }], short, 9, () => 'e1')).toThrow(
      /the sampler returned 1 log-probs for a completion of 2 tokens/,
    );
  });

  it('|Δ log-prob|: TRL mean and max over the tokens, the threshold on each prompt mean', () => {
    const d = new LogpDifference();
    // Prompt 0: |Δ| = 0.1, 0.3 (the third position is padding); prompt 1: |Δ| = 1.0 on its one token.
    d.add(0, Float32Array.from([-1, -2, -3]), Float32Array.from([1, 1, 0]), Float32Array.from([-1.1, -1.7, 0]));
    d.add(1, Float32Array.from([-0.5, 0, 0]), Float32Array.from([1, 0, 0]), Float32Array.from([-1.5]));
    const m = d.metrics();
    expect(m['sampling/sampling_logp_difference/mean']).toBeCloseTo((0.1 + 0.3 + 1.0) / 3, 6);
    expect(m['sampling/sampling_logp_difference/max']).toBeCloseTo(1.0, 6);
    // Prompt means 0.2 and 1.0: a threshold of 0.5 stops on prompt 1, one of 1.5 passes.
    expect(() => d.check(7, 0.5, (g) => `p${g}`)).toThrow(
      /^integrity check, step 7, prompt p1: the sampler's log-probs differ from the learner's by 1\.00 nats per token on average \(threshold 0\.5,/,
    );
    expect(() => d.check(7, 1.5, (g) => `p${g}`)).not.toThrow();
    expect(new LogpDifference().metrics()['sampling/sampling_logp_difference/mean']).toBeNull();
  });
});
