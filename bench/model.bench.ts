// Speed of the built-in policy at its default size, on every tfjs backend that loads here: forward tokens/s (the
// reference policy's pass), rollout tokens/s (sampleGroup, G = 8, on a chess-image-like prompt, 70 new tokens; and the
// GRPO step's 4 prompts × 8 decoded together), learner tokens/s (forward + backward of tokenLogProbs with respect to
// the LoRA weights, 4 prompts × 8 completions of 70 tokens), and the process's peak memory.
// `METRL_BENCH_BACKENDS=wasm` limits the backends (the pure-JS cpu backend takes minutes).
import * as tf from '@tensorflow/tfjs';
import type { BenchRow } from './table.ts';
import { activateBackend, BACKEND_NAMES, type BackendName } from '../models/backend.ts';
import { BuiltinPolicy } from '../models/builtin/policy.ts';
import type { EncodedPrompt, SequenceBatchItem } from '../models/types.ts';
import type { RawImage } from '../core/image.ts';
import { Rng } from '../core/rng.ts';

const NEW_TOKENS = 70;
const GROUP = 8;

/** A prompt shaped like a chess image episode: FEN, then image actions (random pixels: speed does not depend on them). */
function chessLikePrompt(policy: BuiltinPolicy, seed: number, actions: number): EncodedPrompt {
  const rng = new Rng(seed, 'bench-image');
  const image = (): RawImage => ({
    width: 64,
    height: 64,
    channels: 3,
    data: Uint8Array.from({ length: 64 * 64 * 3 }, () => rng.int(256)),
  });
  const parts: Parameters<BuiltinPolicy['encode']>[0] = [
    { type: 'text', text: 'chess\nrnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\n' },
  ];
  for (let i = 0; i < actions; i++) parts.push({ type: 'image', image: image() }, { type: 'text', text: '\n' });
  parts.push({ type: 'text', text: 'FINAL ANSWER: ' });
  return policy.encode(parts);
}

/** Seconds per call: one warm-up call (first calls set up kernels and grow the heap), then at least one timed call
 *  and as many more as fit in `minMs`. `warmUp: false` for the very slow pure-JS backend. */
function secondsPerCall(fn: () => void, minMs: number, warmUp = true): number {
  if (warmUp) fn();
  let calls = 0;
  const start = performance.now();
  do {
    fn();
    calls++;
  } while (performance.now() - start < minMs);
  return (performance.now() - start) / calls / 1000;
}

async function measure(backend: BackendName): Promise<BenchRow[]> {
  await activateBackend(backend);
  const group = `model ${backend}`;
  const policy = BuiltinPolicy.create({ seed: 1, lora: { r: 16, alpha: 32 } });
  // The pure-JS cpu backend is ~30× slower: one timed call of a quarter of the work keeps it to a few minutes.
  const slow = backend === 'cpu';
  const minMs = slow ? 0 : 3000;
  const PROMPTS = slow ? 1 : 4;
  const prompts = Array.from({ length: PROMPTS }, (_, i) => chessLikePrompt(policy, i, 7));
  const promptTokens = prompts[0].tokens.length;
  const rows: BenchRow[] = [
    {
      group,
      name: 'parameters (base)',
      value: policy.parameterCount,
      unit: 'count',
      note: JSON.stringify({ d: policy.arch.dModel, L: policy.arch.nLayers, H: policy.arch.nHeads }),
    },
  ];

  // Completions of fixed length (no EOS) so every backend does the same work.
  const completion = Array.from(
    { length: NEW_TOKENS },
    (_, j) => policy.tokenizer.encodeText('rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1')[j % 56],
  );
  const items: SequenceBatchItem[] = prompts.flatMap((prompt) =>
    Array.from({ length: GROUP }, () => ({ prompt, completion })),
  );
  const completionTokens = items.length * NEW_TOKENS;

  const fwd = secondsPerCall(
    () =>
      tf.tidy(() => {
        policy.tokenLogProbs(items, { useLora: false }).logProbs.dataSync();
      }),
    minMs,
    !slow,
  );
  rows.push({
    group,
    name: 'forward (reference) tokens/s',
    value: (PROMPTS * promptTokens + completionTokens) / fwd,
    unit: 'tok/s',
    note: `${PROMPTS}×${GROUP} completions of ${NEW_TOKENS} after ${promptTokens}-token prompts`,
  });

  const sampling = { temperature: 1, topP: 1, maxNewTokens: NEW_TOKENS };
  let generated = 0;
  const one = secondsPerCall(
    () => {
      generated = policy.sampleGroup(prompts[0], GROUP, sampling, new Rng(1)).reduce((s, c) => s + c.tokens.length, 0);
    },
    minMs,
    !slow,
  );
  rows.push({
    group,
    name: 'rollout tokens/s (sampleGroup G=8)',
    value: generated / one,
    unit: 'tok/s',
    note: `${promptTokens}-token chess-image-like prompt, ≤${NEW_TOKENS} new`,
  });
  if (!slow) {
    const four = secondsPerCall(
      () => {
        generated = policy
          .sampleGroups(prompts, GROUP, sampling, new Rng(1))
          .flat()
          .reduce((s, c) => s + c.tokens.length, 0);
      },
      minMs,
      !slow,
    );
    rows.push({
      group,
      name: `rollout tokens/s (${PROMPTS} prompts × G=8 together)`,
      value: generated / four,
      unit: 'tok/s',
      note: `${four.toFixed(2)} s per GRPO step's rollout`,
    });
  }

  const vars = policy.trainableVariables('lora');
  const learn = secondsPerCall(
    () => {
      const { value, grads } = tf.variableGrads(() => {
        const r = policy.tokenLogProbs(items, { useLora: true });
        return tf.sum(tf.mul(r.logProbs, r.mask)) as tf.Scalar;
      }, vars);
      value.dataSync();
      tf.dispose([value, ...Object.values(grads)]);
    },
    minMs,
    !slow,
  );
  rows.push({
    group,
    name: 'learner tokens/s (fwd+bwd, LoRA)',
    value: completionTokens / learn,
    unit: 'tok/s',
    note: `${learn.toFixed(2)} s per ${PROMPTS}×${GROUP} completions in one call (chunked)`,
  });
  // The trainer passes one group of 8 per call (its learnerBatch): no chunking, no extra forward pass.
  const perGroup = secondsPerCall(
    () => {
      for (const prompt of prompts) {
        const groupItems = items.filter((it) => it.prompt === prompt);
        const { value, grads } = tf.variableGrads(() => {
          const r = policy.tokenLogProbs(groupItems, { useLora: true });
          return tf.sum(tf.mul(r.logProbs, r.mask)) as tf.Scalar;
        }, vars);
        value.dataSync();
        tf.dispose([value, ...Object.values(grads)]);
      }
    },
    minMs,
    !slow,
  );
  rows.push({
    group,
    name: 'learner tokens/s (one group of 8 per call)',
    value: completionTokens / perGroup,
    unit: 'tok/s',
    note: `${perGroup.toFixed(2)} s per ${PROMPTS}×${GROUP} completions`,
  });
  rows.push({ group, name: 'peak RSS', value: process.resourceUsage().maxRSS / 1024, unit: 'MB' });
  policy.dispose();
  return rows;
}

export async function run(): Promise<BenchRow[]> {
  const wanted = (process.env.METRL_BENCH_BACKENDS ?? BACKEND_NAMES.join(',')).split(',') as BackendName[];
  const rows: BenchRow[] = [];
  for (const backend of BACKEND_NAMES.filter((b) => wanted.includes(b))) {
    try {
      await activateBackend(backend);
    } catch (error) {
      rows.push({
        group: `model ${backend}`,
        name: 'not available',
        value: NaN,
        unit: '',
        note: (error instanceof Error ? error.message : String(error)).split('\n')[0].slice(0, 80),
      });
      continue;
    }
    rows.push(...(await measure(backend)));
  }
  return rows;
}
