// `metrl train --async` as a user runs it, on two real `metrl serve --enable-lora` replicas on 127.0.0.1 (a tiny
// checkpoint, a reward with a spread so that the adapters move): with --max-staleness 0 the run writes exactly the
// synchronous run's metrics.jsonl and samples.jsonl (wall-clock fields and which replica served a group aside); with
// K = 1 and 2 each step's groups are sampled K updates behind; a K = 1 run killed -9 mid-run resumes to exactly the
// uninterrupted run (its checkpoint keeps the round already submitted for the next step and the adapter sampling
// it). A replica whose log-probs drift from the learner's stops the run with one line (the integrity check); --async
// without servers and --max-staleness without --async are one line each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { startServe, type Served } from '../helpers/serve-process.ts';
import { killGroup } from '../helpers/tracked-children.ts';
import { trainAndKill } from '../helpers/train-and-kill.ts';
import { tinyBaseCheckpoint, TINY_ARCHITECTURE } from '../trainer/tiny-base.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';

const root = scratchDir('async');
// Boxes prompts need more than the tiny base's 256 positions; its response is the completion itself.
const base = tinyBaseCheckpoint(
  BuiltinPolicy.create({ architecture: { ...TINY_ARCHITECTURE, maxContext: 512 }, seed: 1 }),
);
// A reward with a spread inside each group (the tiny model's answers are never right): the last character's code modulo 3, halved.
const reward = join(root, 'last-char.ts');
writeFileSync(
  reward,
  'export default (completion: string): number => (completion.length === 0 ? 0 : completion.charCodeAt(completion.length - 1) % 3) / 2;\n',
);
const TINY = [
  'train',
  '--domain',
  'boxes',
  '--modality',
  'text',
  '--checkpoint',
  base,
  '--backend',
  'wasm',
  '--train-size',
  '8',
  '--test-size',
  '4',
  '--group-size',
  '4',
  '--prompts-per-step',
  '4',
  '--max-completion-tokens',
  '4',
  '--eval-every',
  '3',
  '--checkpoint-every',
  '1',
  '--learning-rate',
  '0.05',
  '--seed',
  '1',
  '--temperature',
  '1',
  '--reward',
  reward,
  '--steps',
  '6',
  '--quiet',
];
const SERVE = [
  '--checkpoint',
  base,
  '--port',
  '0',
  '--backend',
  'wasm',
  '--enable-lora',
  '--logprobs-mode',
  'processed_logprobs',
];
let a: Served;
let b: Served;
const stubs: Server[] = [];
const both = () => ['--rollout-server', a.url, '--rollout-server', b.url];

const lines = (runDir: string, file: string) => readFileSync(join(runDir, file), 'utf8').trim().split('\n');
/** Rows without what differs between two runs of the same training: wall-clock times, the replica of each group. */
function comparable(runDir: string) {
  return lines(runDir, 'metrics.jsonl').map((l) => {
    const { time, rolloutTokensPerSecond, learnerTokensPerSecond, seconds, ...rest } = JSON.parse(l);
    if (rest.trl) delete rest.trl.step_time;
    if (rest.rollout) delete rest.rollout.servers;
    return rest;
  });
}
const trainRows = (runDir: string) => comparable(runDir).filter((r) => r.type === 'train');

beforeAll(async () => {
  [a, b] = await Promise.all([startServe(SERVE), startServe(SERVE)]);
}, 60_000);

afterAll(() => {
  killGroup(a.child);
  killGroup(b.child);
  for (const s of stubs) s.close();
});

describe('train --async', () => {
  const sync = join(root, 'sync');
  const k1 = join(root, 'k1');

  it('with --max-staleness 0 is the synchronous run, byte for byte', async () => {
    const first = await metrl([...TINY, '--out', sync, ...both()]);
    expect(first.code, first.stderr).toBe(0);
    const k0 = join(root, 'k0');
    const second = await metrl([...TINY, '--out', k0, ...both(), '--async', '--max-staleness', '0']);
    expect(second.code, second.stderr).toBe(0);
    expect(comparable(k0)).toEqual(comparable(sync));
    expect(readFileSync(join(k0, 'samples.jsonl'), 'utf8')).toBe(readFileSync(join(sync, 'samples.jsonl'), 'utf8'));
    // The adapters moved (otherwise stale and fresh samples would be the same).
    expect(trainRows(sync).some((r) => r.kl > 0)).toBe(true);
    expect(trainRows(sync).map((r) => r.rollout.adapterVersions[0])).toEqual([0, 1, 2, 3, 4, 5]);
  }, 120_000);

  it('with K = 1 and 2 samples each step K updates behind, and logs the gap to the learner', async () => {
    const run1 = await metrl([...TINY, '--out', k1, ...both(), '--async', '--max-staleness', '1']);
    expect(run1.code, run1.stderr).toBe(0);
    expect(trainRows(k1).map((r) => r.rollout.adapterVersions)).toEqual([0, 0, 1, 2, 3, 4].map((v) => [v, v, v, v]));
    const k2 = join(root, 'k2');
    const run2 = await metrl([...TINY, '--out', k2, ...both(), '--async', '--max-staleness', '2']);
    expect(run2.code, run2.stderr).toBe(0);
    expect(trainRows(k2).map((r) => r.rollout.adapterVersions[0])).toEqual([0, 0, 0, 1, 2, 3]);
    // Stale samples: the learner's old policy is a few updates past the sampler's; the correction's ratios leave 1.
    const gaps = trainRows(k1).map((r) => r.trl['sampling/sampling_logp_difference/mean']);
    expect(gaps[0]).toBeLessThan(1e-5);
    expect(Math.max(...gaps.slice(2))).toBeGreaterThan(1e-3);
    expect(trainRows(k1)[0].trl['sampling/importance_sampling_ratio/mean']).toBeCloseTo(1, 4);
    // Other samples than the synchronous run's from step 2 on: the same training, one update off-policy.
    expect(lines(k1, 'samples.jsonl')).not.toEqual(lines(sync, 'samples.jsonl'));
  }, 120_000);

  it('a K = 1 run killed -9 resumes to exactly the uninterrupted run', async () => {
    const cut = join(root, 'cut');
    await trainAndKill(
      [...TINY, '--out', cut, ...both(), '--async', '--max-staleness', '1'],
      join(cut, 'checkpoints', 'latest'),
      3,
    );
    // The checkpoint holds the round already submitted for step 4 and the adapter sampling it.
    const state = JSON.parse(readFileSync(join(cut, 'checkpoints', 'step-3', 'trainer_state.json'), 'utf8'));
    expect(state.rolloutsAhead.map((r: { step: number; version: number }) => [r.step, r.version])).toEqual([[4, 2]]);
    expect(existsSync(join(cut, 'checkpoints', 'step-3', 'rollout-adapters', 'v2', 'adapter_model.safetensors'))).toBe(
      true,
    );
    const resumed = await metrl(['train', '--resume', '--out', cut, '--quiet']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(comparable(cut)).toEqual(comparable(k1));
    expect(readFileSync(join(cut, 'samples.jsonl'), 'utf8')).toBe(readFileSync(join(k1, 'samples.jsonl'), 'utf8'));
  }, 120_000);

  it('stops with one line when a replica’s log-probs drift from the learner’s, keeping the step-0 checkpoint', async () => {
    // A proxy in front of replica a that returns every log-prob 0.7 nats lower.
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        // GETs (the preflight's model list) pass through as they are; POSTs carry their body.
        const answer = await fetch(a.url.replace(/\/v1$/, '') + req.url, {
          method: req.method,
          ...(req.method === 'GET'
            ? {}
            : { headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) }),
        });
        let text = await answer.text();
        if (req.url?.endsWith('/completions')) {
          const json = JSON.parse(text);
          for (const c of json.choices)
            c.logprobs.token_logprobs = c.logprobs.token_logprobs.map((x: number) => x - 0.7);
          text = JSON.stringify(json);
        }
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
      });
    }).listen(0, '127.0.0.1');
    stubs.push(server);
    await new Promise((done) => server.once('listening', done));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const out = join(root, 'drift');
    expectUserError(
      await metrl([...TINY, '--out', out, '--rollout-server', url, '--async']),
      /^metrl: error: integrity check, step 1, prompt boxes-train-\S+: the sampler's log-probs differ from the learner's by 0\.700 nats per token on average \(threshold 0\.5, --logp-difference-threshold\)/,
    );
    expect(readFileSync(join(out, 'checkpoints', 'latest'), 'utf8').trim()).toBe('step-0');
  }, 60_000);

  it('refuses --async without rollout servers and --max-staleness without --async', async () => {
    expectUserError(
      await metrl([...TINY, '--out', join(root, 'no-servers'), '--async']),
      /async: generation overlaps the update on rollout servers: add --rollout-server URL/,
    );
    expectUserError(
      await metrl([...TINY, '--out', join(root, 'no-async'), ...both(), '--max-staleness', '2']),
      /--max-staleness: bounds how far rollouts run ahead of the update, which only --async does/,
    );
    expectUserError(
      await metrl([...TINY, '--out', join(root, 'negative'), ...both(), '--async', '--max-staleness', '-1']),
      /^metrl: error: --max-staleness: .*>=0 \(got -1\)/,
    );
  }, 60_000);
});
