// The dump the PyTorch peer (../shared/peers/torch-grpo-step.sh, PEER_DUMP) reads, written by the project's own code
// at its current module paths: the peer's torch_dump.mts imports modules that moved to models/builtin/ and
// trainer/periodic-eval.ts, so this file replaces it (same files, same contents, same printed lines). Run from the
// project checkout:
//   node bin/run-ts.js bench/peer-dump.ts OUT_DIR [--prompts-only]
//   PEER_DUMP="node bin/run-ts.js bench/peer-dump.ts" bash ../shared/peers/torch-grpo-step.sh --check --metrl
// Always: the 4 prompts of the first GRPO step (trainer/grpo/loop.ts order: 100 train episodes, 5 actions, seed 0) for
// chess with image actions and shell with text actions, as token ids + 64 px patch pixels, and the completion
// budgets. Unless --prompts-only (equivalence data for torch_check.py): the base model's logits at every position of
// chess prompt 0, the same with a random non-zero LoRA (saved as a PEFT adapter), greedy KV-cache decodes, and one GRPO
// loss / gradient / clip / AdamW step on 8 completions sampled at T = 0.5. JSON + raw little-endian float32 files.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../models/backend.ts';
import { loadBaseCheckpoint } from '../models/builtin/base-checkpoint.ts';
import { getEnv } from '../envs/registry.ts';
import { generateEpisodes } from '../envs/generate.ts';
import { targetText } from '../models/builtin/template.ts';
import { packPrompts, sampleGroups } from '../models/builtin/sampling.ts';
import { loraAdapters } from '../models/builtin/lora.ts';
import { PositionCursor } from '../models/builtin/positions.ts';
import { DataOrder } from '../trainer/data-order.ts';
import { Rng } from '../core/rng.ts';
import { clipGradientsByGlobalNorm, grpoLoss } from '../trainer/loss/loss.ts';
import { AdamW } from '../trainer/adamw.ts';
import { completionBudget } from '../trainer/periodic-eval.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import type { EncodedPrompt } from '../models/types.ts';
import type { Episode } from '../core/episode.ts';

const OUT = process.argv[2];
if (!OUT) throw new Error('usage: bench/peer-dump.ts OUT_DIR [--prompts-only]');
const PROMPTS_ONLY = process.argv.includes('--prompts-only');
mkdirSync(OUT, { recursive: true });
const meta: Record<string, unknown> = {};
const bin = (name: string, data: ArrayLike<number>) =>
  writeFileSync(join(OUT, `${name}.f32`), Buffer.from(Float32Array.from(data).buffer));
await initBackend('wasm', null);
const policy = loadBaseCheckpoint(join(CHECKPOINTS_DIR, 'base'));
const tok = policy.tokenizer;

// Prompts of a GRPO step exactly as trainer/grpo/collect-groups.ts picks them (train split, seed 0, DataOrder seed 0).
let chessPrompts: EncodedPrompt[] = [];
for (const [domain, modality] of [
  ['chess', 'image'],
  ['shell', 'text'],
] as const) {
  const env = await getEnv(domain);
  const train = generateEpisodes(env, { n: 100, actions: 5, split: 'train', seed: 0, modality });
  const picked = new DataOrder(100, 0).take(4).map((i) => train[i]);
  const prompts = picked.map((e) => policy.prompt(env, e));
  const refLen = (eps: Episode[]) => Math.max(...eps.map((e) => policy.encodeTarget(targetText(env, e)).length));
  const test2 = generateEpisodes(env, { n: 2, actions: 5, split: 'test', seed: 1234, modality });
  const test200 = generateEpisodes(env, { n: 200, actions: 5, split: 'test', seed: 1234, modality });
  meta[domain] = {
    promptLengths: prompts.map((p) => p.tokens.length),
    images: prompts.map((p) => p.images.length),
    budgetBench: completionBudget([refLen(train), refLen(test2)]),
    budgetDefault: completionBudget([refLen(train), refLen(test200)]),
    promptText: tok.decode(prompts[0].tokens),
    targetText: targetText(env, picked[0]),
  };
  writeFileSync(
    join(OUT, `prompts_${domain}.json`),
    JSON.stringify(prompts.map((p) => ({ tokens: p.tokens, nImages: p.images.length }))),
  );
  bin(
    `prompts_${domain}_images`,
    prompts.flatMap((p) => p.images.flatMap((im) => Array.from(im))),
  );
  if (domain === 'chess') chessPrompts = prompts;
  if (domain === 'shell' && !PROMPTS_ONLY) {
    const l = policy.sequenceLogits(prompts[0], false);
    bin('logits_shell_base', l.dataSync());
    l.dispose();
  }
}

if (PROMPTS_ONLY) {
  writeFileSync(join(OUT, 'meta.json'), JSON.stringify(meta, null, 1));
  process.exit(0);
}
const prompt = chessPrompts[0];
// 1. Base logits at every position of the prompt.
const { batch } = packPrompts(policy, tok, [prompt]);
writeFileSync(
  join(OUT, 'seq.json'),
  JSON.stringify({
    tokens: Array.from(batch.tokens),
    positions: Array.from(batch.positions),
    slots: batch.slots,
    nImages: batch.images.length,
  }),
);
bin(
  'seq_images',
  batch.images.flatMap((im) => Array.from(im)),
);
const base = policy.sequenceLogits(prompt, false);
bin('logits_base', base.dataSync());
meta.logitsShape = base.shape;
base.dispose();

// 2. A non-zero LoRA (A as attachLora draws it, B random), saved in PEFT layout; logits with it.
policy.attachLora({ r: 16, alpha: 32 }, new Rng(7, 'equiv-lora'));
const brng = new Rng(11, 'equiv-lora-b');
for (const a of loraAdapters(policy.lora!)) {
  const vals = new Float32Array(a.b.size);
  for (let i = 0; i < vals.length; i++) vals[i] = (brng.next() * 2 - 1) * 0.05;
  a.b.assign(tf.tensor(vals, a.b.shape));
}
policy.saveAdapter(join(OUT, 'adapter'));
const withLora = policy.sequenceLogits(prompt, true);
bin('logits_lora', withLora.dataSync());
withLora.dispose();

// 3. Greedy KV-cache decode with the LoRA (merged by sampleGroups), 2 prompts x group 2, up to 376 tokens.
const greedy = sampleGroups(
  policy,
  tok,
  policy.lora,
  chessPrompts.slice(0, 2),
  2,
  { temperature: 0, topP: 1, maxNewTokens: 376 },
  new Rng(1),
);
writeFileSync(
  join(OUT, 'greedy.json'),
  JSON.stringify(
    greedy.map((g) =>
      g.map((c) => ({ tokens: c.tokens, logProbs: Array.from(c.logProbs), finished: c.finished, text: c.text })),
    ),
  ),
);
// positions of prompt 0 + its greedy completion (the prompt's cursor continued)
writeFileSync(
  join(OUT, 'greedy_positions.json'),
  JSON.stringify(new PositionCursor(policy.arch.positions, tok).pushAll([...prompt.tokens, ...greedy[0][0].tokens])),
);

// 4. One GRPO loss + gradient + clip + AdamW step, as trainer/grpo/loop.ts does it, on 8 completions of prompt 0 sampled at
//    T = 0.5 (variable lengths: padding and masks are exercised).
const T = 0.5;
const sampled = sampleGroups(
  policy,
  tok,
  policy.lora,
  [prompt],
  8,
  { temperature: T, topP: 1, maxNewTokens: 376 },
  new Rng(3, 'equiv-sample'),
)[0];
const seqs = sampled.map((c) => ({ prompt, completion: c.tokens }));
const adv = Float32Array.from([1.2, -0.4, 0.3, -1.1, 0.8, -0.2, 0.5, -1.1]);
const ref = tf.keep(tf.tidy(() => policy.tokenLogProbs(seqs, { useLora: false, temperature: T }).logProbs));
const vars = policy.trainableVariables('lora');
let lpDump: Float32Array | null = null;
let entDump: Float32Array | null = null;
const { value, grads } = tf.variableGrads(() => {
  const lp = policy.tokenLogProbs(seqs, { useLora: true, withEntropy: true, temperature: T });
  lpDump = (lp.logProbs.dataSync() as Float32Array).slice();
  entDump = (lp.entropy!.dataSync() as Float32Array).slice();
  const old = tf.tensor(lp.logProbs.dataSync(), lp.logProbs.shape) as tf.Tensor2D;
  const out = grpoLoss(
    { logProbs: lp.logProbs, oldLogProbs: old, refLogProbs: ref, mask: lp.mask, advantages: tf.tensor1d(adv) },
    { epsilon: 0.2, beta: 0.04, lossType: 'grpo', maxCompletionTokens: 376, totalSequences: 8 },
  );
  return out.loss;
}, vars);
const L = Math.max(...sampled.map((c) => c.tokens.length));
const adapters = loraAdapters(policy.lora!);
writeFileSync(
  join(OUT, 'grpo.json'),
  JSON.stringify({
    completions: sampled.map((c) => c.tokens),
    advantages: Array.from(adv),
    L,
    loss: value.dataSync()[0],
    order: adapters.map((a) => a.module),
  }),
);
bin('grpo_ref', ref.dataSync());
bin('grpo_logp', lpDump!);
bin('grpo_entropy', entDump!);
// gradients in adapter order, A then B, in metrl's [in, r] / [r, out] layout
bin(
  'grpo_grads',
  adapters.flatMap((a) => [
    ...Array.from(grads[a.a.name].dataSync() as Float32Array),
    ...Array.from(grads[a.b.name].dataSync() as Float32Array),
  ]),
);
const clipped = clipGradientsByGlobalNorm(grads, 1);
meta.gradNorm = clipped.norm;
const opt = new AdamW(vars, { learningRate: 2e-4, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 });
opt.apply(clipped.grads);
bin(
  'grpo_after',
  adapters.flatMap((a) => [
    ...Array.from(a.a.dataSync() as Float32Array),
    ...Array.from(a.b.dataSync() as Float32Array),
  ]),
);
writeFileSync(join(OUT, 'meta.json'), JSON.stringify(meta, null, 1));
console.log(JSON.stringify(meta, (k, v) => (k === 'promptText' || k === 'targetText' ? undefined : v)));
console.log(
  'loss',
  value.dataSync()[0],
  'gradNorm',
  clipped.norm,
  'completion lengths',
  sampled.map((c) => c.tokens.length),
);
