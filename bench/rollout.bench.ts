// GRPO steps with the rollouts in-process against rollouts on one and on two `metrl serve --enable-lora` replicas
// (train --rollout-server, docs/rollout-servers.md): the default training config on the shell game with text actions
// (token-id prompts: /v1/completions; image prompts go through /v1/chat/completions), from checkpoints/base, ONNX Runtime in the trainer
// and in each server. Rows: seconds per step and its phases, rollout tokens/s, and what the HTTP round trips cost: the
// mean round trip of a one-token request on an idle server, and that times the step's requests (one per group, plus
// one adapter load per replica) per rollout token. All processes share this machine's cores: on a small machine two
// replicas compete with each other and with the learner, so the figures show the protocol's cost, not a scale-out.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BenchRow } from './table.ts';
import { initBackend } from '../models/backend.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import { getEnv } from '../envs/registry.ts';
import { resolveConfig } from '../trainer/config.ts';
import { loadTrainingPolicy, train } from '../trainer/grpo/loop.ts';
import type { TrainRow } from '../trainer/logs/metrics.ts';

const MEASURED_STEPS = 2;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
const BIN = resolve(import.meta.dirname, '..', 'bin', 'metrl.js');

/** `metrl serve` on 127.0.0.1 with a free port; resolves with its URL (rejects if it exits first or takes over 60 s). */
function startServer(base: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--checkpoint', base, '--port', '0', '--enable-lora', '--logprobs-mode', 'processed_logprobs'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((done, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error('metrl serve did not start within 60 s')), 60_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('http://'));
      if (line) {
        clearTimeout(timer);
        done({ url: line.trim(), child });
      }
    });
    child.on('exit', (code) => fail(new Error(`metrl serve exited ${code}`)));
  });
}

/** Mean seconds of a one-token request (n = 1) on `url`, over 20 after 3 warm-ups. */
async function roundTrip(url: string): Promise<number> {
  const once = async () => {
    const t = performance.now();
    const r = await fetch(`${url}/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: [1, 40, 41], max_tokens: 1, temperature: 0, logprobs: 0, return_token_ids: true }),
      signal: AbortSignal.timeout(30_000),
    });
    await r.text();
    return (performance.now() - t) / 1000;
  };
  for (let i = 0; i < 3; i++) await once();
  let total = 0;
  for (let i = 0; i < 20; i++) total += await once();
  return total / 20;
}

export async function run(): Promise<BenchRow[]> {
  const backend = await initBackend(process.env.METRL_BACKEND, null);
  const base = join(CHECKPOINTS_DIR, 'base');
  if (!existsSync(join(base, 'model.safetensors')))
    return [{ group: 'rollout servers', name: 'skipped', value: 0, unit: '', note: 'no checkpoints/base' }];
  const scratch = mkdtempSync(join(tmpdir(), 'metrl-rollout-bench-'));
  const rows: BenchRow[] = [];
  const servers: { url: string; child: ChildProcess }[] = [];
  try {
    servers.push(...(await Promise.all([startServer(base), startServer(base)])));
    const rtt = await roundTrip(servers[0].url);
    rows.push({
      group: 'rollout servers',
      name: 'HTTP round trip, 1-token request',
      value: rtt * 1000,
      unit: 'ms',
      note: `metrl serve on 127.0.0.1, idle; load ${load()}`,
    });
    const env = await getEnv('shell');
    for (const [label, urls] of [
      ['in-process', []],
      ['1 replica', [servers[0].url]],
      ['2 replicas', servers.map((s) => s.url)],
    ] as const) {
      const config = resolveConfig(
        {},
        {
          steps: 1 + MEASURED_STEPS,
          testSize: 2,
          evalEvery: 1000,
          checkpointEvery: 1000,
          engine: 'ort',
          ...(urls.length > 0 ? { rolloutServer: [...urls] } : {}),
        },
      );
      const setup = await loadTrainingPolicy(base, config);
      const steps: TrainRow[] = [];
      await train({
        env,
        ...setup,
        config,
        modality: 'text',
        runDir: join(scratch, label.replace(/ /g, '-')),
        resume: false,
        onEvent: (e) => e.kind === 'step' && steps.push(e.row),
      });
      setup.policy.dispose();
      const measured = steps.slice(1);
      const mean = (f: (r: TrainRow) => number) => measured.reduce((s, r) => s + f(r), 0) / measured.length;
      const tokens = mean((r) => r.completionLength * r.groups * config.groupSize);
      const group = `grpo shell text, rollouts ${label}`;
      const note = `ORT in every process, learner tfjs ${backend.name}, ${config.promptsPerStep * config.gradientAccumulation}×${config.groupSize} completions, load ${load()}`;
      process.stderr.write(
        `bench rollout: ${group}: ${measured.map((r) => r.time.total.toFixed(2)).join(' ')} s per step (load ${load()})\n`,
      );
      rows.push(
        { group, name: 'seconds per step', value: mean((r) => r.time.total), unit: 's', note },
        { group, name: '  rollout', value: mean((r) => r.time.rollout), unit: 's' },
        { group, name: '  reward', value: mean((r) => r.time.reward), unit: 's' },
        { group, name: '  log-probs (reference)', value: mean((r) => r.time.logprobs), unit: 's' },
        { group, name: '  update (forward + backward + AdamW)', value: mean((r) => r.time.update), unit: 's' },
        {
          group,
          name: 'rollout tokens/s',
          value: mean((r) => r.rolloutTokensPerSecond),
          unit: 'tok/s',
          note: `mean completion ${mean((r) => r.completionLength).toFixed(1)} tokens`,
        },
      );
      if (urls.length > 0) {
        // One request per group plus one adapter load per replica, each at least a round trip.
        const requests = mean((r) => r.groups) + urls.length;
        rows.push({
          group,
          name: 'round trips per rollout token',
          value: (requests * rtt * 1000) / tokens,
          unit: 'ms/tok',
          note: `${requests.toFixed(0)} requests × ${(rtt * 1000).toFixed(1)} ms over ${tokens.toFixed(0)} tokens`,
        });
      }
    }
  } finally {
    for (const s of servers) s.child.kill('SIGTERM');
    rmSync(scratch, { recursive: true, force: true });
  }
  return rows;
}
