// Hugging Face checkpoints on `--engine ort` through the real binary: ONNX Runtime generates (rollouts, reference and
// old-policy log-probs, evaluation, serve; the graph of models/onnx/hf/hf-graph.ts), runs the vision tower and computes
// the LoRA gradients (models/onnx/hf/hf-learner.ts); tfjs keeps the adapters' variables and AdamW. Checked against the tfjs engine on the tiny idefics3 fixture with chess image prompts and a
// reward with a spread (so the adapters move and the reference log-probs matter): the same completions, rewards and
// evaluations, the loss statistics within float tolerance; `evaluate` and `serve` with --engine ort on the trained
// adapter answer as tfjs does. A model type the ONNX builder has no graph for is one line, exit 2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSameAnswers, startServe } from '../helpers/serve-process.ts';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl } from './helpers.ts';
import { hfCheckpointCopy, hfScratchDir, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';

const SLOW = 400_000;
const root = hfScratchDir('hf-engine');
const idefics3 = hfCheckpointCopy('idefics3');
// The last character's code modulo 3, halved: a spread inside each group although a random model never answers right.
const reward = join(root, 'last-char.ts');
writeFileSync(
  reward,
  'export default (completion: string): number => (completion.length === 0 ? 0 : completion.charCodeAt(completion.length - 1) % 3) / 2;\n',
);
const TRAIN = [
  'train',
  '--checkpoint',
  idefics3,
  '--domain',
  'chess',
  '--modality',
  'image',
  '--steps',
  '3',
  '--train-size',
  '4',
  '--test-size',
  '2',
  '--eval-every',
  '3',
  '--checkpoint-every',
  '3',
  '--max-completion-tokens',
  '6',
  '--group-size',
  '3',
  '--prompts-per-step',
  '2',
  '--temperature',
  '1',
  '--learning-rate',
  '0.05',
  '--seed',
  '3',
  '--reward',
  reward,
  '--quiet',
];
const rows = (dir: string, file = 'metrics.jsonl') =>
  readFileSync(join(dir, file), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
const comparable = (dir: string) =>
  rows(dir).map(({ time, rolloutTokensPerSecond, learnerTokensPerSecond, seconds, ...rest }) => withoutStepTime(rest));
const tfjsRun = join(root, 'tfjs');
const ortRun = join(root, 'ort');

beforeAll(async () => {
  const a = await metrl([...TRAIN, '--engine', 'tfjs', '--out', tfjsRun]);
  const b = await metrl([...TRAIN, '--engine', 'ort', '--threads', '1', '--out', ortRun]);
  expect(a.stderr).toBe('');
  expect(b.stderr).toBe('');
  expect([a.code, b.code]).toEqual([0, 0]);
}, SLOW);
afterAll(() => removeHfCopies());

describe('metrl train --checkpoint <Hugging Face> --engine ort', () => {
  it('draws the same completions as tfjs and logs the same rewards and evaluations, the loss statistics within float tolerance', () => {
    expect(JSON.parse(readFileSync(join(ortRun, 'config.json'), 'utf8'))).toMatchObject({
      config: { engine: 'ort' },
      ort: { device: 'cpu', threads: 1 },
    });
    expect(rows(ortRun, 'samples.jsonl')).toEqual(rows(tfjsRun, 'samples.jsonl'));
    const [t, o] = [comparable(tfjsRun), comparable(ortRun)];
    expect(o.map((r) => `${r.type}:${r.step}`)).toEqual(t.map((r) => `${r.type}:${r.step}`));
    const train = t.filter((r) => r.type === 'train');
    // The adapters moved and the reference differs from the policy after step 1: the comparison is not of zeros.
    expect(train.some((r) => r.rewardStd > 0) && train.every((r) => r.gradNorm > 0)).toBe(true);
    expect(train.slice(1).every((r) => r.kl > 1e-5)).toBe(true);
    t.forEach((tr, i) => {
      const or = o[i];
      if (tr.type !== 'train') return expect(or).toEqual(tr);
      const { kl, loss, gradNorm, entropy, ratioMean, trl, ...same } = tr;
      const { kl: okl, loss: oloss, gradNorm: ograd, entropy: oent, ratioMean: oratio, trl: otrl, ...osame } = or;
      expect(osame).toEqual(same);
      // The learner's log-probs and gradients and (from step 2 on, when the adapters are no longer zero) the reference
      // log-probs come from ORT, whose kernels round differently (logits within 1e-4, tests/models/onnx-hf.test.ts;
      // gradients within 1e-4 relative, tests/models/onnx-hf-learner.test.ts).
      expect(Math.abs(okl - kl)).toBeLessThan(1e-2 * kl + 1e-6);
      expect(oloss).toBeCloseTo(loss, 4);
      expect(oent).toBeCloseTo(entropy, 4);
      expect(oratio).toBeCloseTo(ratioMean, 5);
      expect(Math.abs(ograd - gradNorm)).toBeLessThan(0.02 * gradNorm);
      expect(otrl.reward).toBe(trl.reward);
    });
  });
});

describe('evaluate and serve --engine ort on a Hugging Face checkpoint', () => {
  it(
    'evaluate answers as tfjs does on the trained adapter, and records the engine',
    async () => {
      const out = (e: string) => join(root, `eval-${e}`);
      const args = (e: string) => [
        'evaluate',
        '--checkpoint',
        ortRun,
        '--domain',
        'chess',
        '--modality',
        'image',
        '--n',
        '3',
        '--max-tokens',
        '6',
        '--engine',
        e,
        '--quiet',
        '--out',
        out(e),
      ];
      for (const e of ['tfjs', 'ort']) {
        const result = await metrl(args(e));
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
      }
      const answers = (e: string) => rows(out(e), 'chess-image.jsonl').map((r) => [r.episode_id, r.response]);
      expect(answers('ort')).toHaveLength(3);
      expect(answers('ort')).toEqual(answers('tfjs'));
      expect(JSON.parse(readFileSync(join(out('ort'), 'config.json'), 'utf8')).loaded).toMatchObject({
        engine: 'ort',
        ort: { device: 'cpu', threads: null },
      });
    },
    SLOW,
  );

  describe('serve', () => {
    const urls: Record<string, string> = {};
    beforeAll(async () => {
      for (const e of ['tfjs', 'ort']) {
        const served = await startServe(['--checkpoint', ortRun, '--port', '0', '--engine', e]);
        urls[e] = served.url;
        if (e === 'ort')
          expect(served.stderr()).toMatch(/inference engine: ONNX Runtime [\d.]+ \(cpu, threads: all cores\)/);
      }
    }, SLOW);

    it("gives tfjs's greedy answer and, for a seed, its sampled ones", async () => {
      const greedyOrt = await expectSameAnswers(urls, [{ role: 'user', content: 'Move the apple from A to B.' }]);
      expect(greedyOrt[0].length).toBeGreaterThan(0);
    });
  });
});

describe('bad input', () => {
  it('a model type without an ONNX graph is one line naming it and --engine tfjs, exit 2', async () => {
    const dir = join(root, 'mistral');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({ model_type: 'mistral', architectures: ['MistralForCausalLM'] }),
    );
    expectUserError(
      await metrl([
        'train',
        '--checkpoint',
        dir,
        '--domain',
        'shell',
        '--modality',
        'text',
        '--engine',
        'ort',
        '--out',
        join(root, 'bad-run'),
      ]),
      /^metrl: error: --engine ort: the ONNX Runtime engine has no graph for model type mistral \(it runs the built-in model and llama, qwen2, qwen3, gemma3_text, gemma3, idefics3, qwen2_5_vl, qwen3_vl\); use --engine tfjs$/,
    );
  });
});

/** TRL's step_time is wall-clock seconds too. */
function withoutStepTime<T extends { trl?: Record<string, unknown> }>(row: T): T {
  if (!row.trl) return row;
  const { step_time: _, ...trl } = row.trl;
  return { ...row, trl };
}
