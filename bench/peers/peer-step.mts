// One forced GRPO step on metrl's side of the PyTorch peers (hf-step.mts for text, vlm-step.mts for an image
// prompt), as the peer's script times it: rollout (G completions forced to n tokens), reference log-probs (LoRA off,
// no gradient), update (trainer/grpo/loop.ts updatePolicy with μ = 1: grpoLoss with ε 0.2, β 0.04, old = the detached own
// log-probs; gradients clipped to norm 1, AdamW, the ORT sampler's adapters synced). Wall and CPU seconds per phase.
import { imp, tf } from './checkout.mts';

const { grpoLoss, clipGradientsByGlobalNorm } = await imp('trainer/loss/loss.ts');
const { summedLossGradients } = await imp('models/learner.ts');

/* eslint-disable @typescript-eslint/no-explicit-any */
export interface PeerStepSetup {
  sampler: any;
  learner: any;
  optimizer: { apply(grads: Record<string, unknown>): void };
  vars: unknown[];
  /** Set on the ORT engine: its sampler reads the adapters after the update. */
  syncLora: boolean;
  group: number;
  rng: { next(): number };
}

export const cpuNow = (): number => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
};

/** One step on `prompt` with completions of n tokens; `mark` (optional) runs after each phase. */
export function peerStep(s: PeerStepSetup, prompt: unknown, n: number, mark: () => void = () => {}) {
  const G = s.group;
  const w = [performance.now()];
  const c = [cpuNow()];
  const phase = () => (w.push(performance.now()), c.push(cpuNow()), mark());
  // rollout
  const [group] = s.sampler.sampleGroups([prompt], G, { temperature: 1, topP: 1, maxNewTokens: n }, s.rng);
  phase();
  if (group.length !== G || group.some((x: { tokens: number[] }) => x.tokens.length !== n))
    throw new Error(`not forced: ${group.map((x: { tokens: number[] }) => x.tokens.length)}`);
  const rewards = Array.from({ length: G }, () => s.rng.next());
  const mean = rewards.reduce((a, b) => a + b, 0) / G;
  const std = Math.sqrt(rewards.reduce((a, b) => a + (b - mean) ** 2, 0) / (G - 1));
  const adv = Float32Array.from(rewards, (r) => (r - mean) / (std + 1e-4));
  const items = group.map((x: { tokens: number[] }) => ({ prompt, completion: x.tokens }));
  // reference (LoRA off, no gradient)
  const lp = tf.tidy(() => s.sampler.tokenLogProbs(items, { useLora: false, temperature: 1 }));
  lp.mask.dispose();
  lp.entropy?.dispose();
  const ref = tf.keep(lp.logProbs);
  ref.dataSync();
  phase();
  // update
  let entropy = 0;
  const { values, grads } = summedLossGradients(
    s.learner,
    [
      {
        batch: items,
        options: { useLora: true, withEntropy: true, temperature: 1 },
        loss: (l: { logProbs: any; mask: any; entropy?: any }) => {
          const old = tf.tensor(l.logProbs.dataSync(), l.logProbs.shape);
          const out = grpoLoss(
            {
              logProbs: l.logProbs,
              oldLogProbs: old,
              refLogProbs: ref,
              mask: l.mask,
              advantages: tf.tensor1d(adv),
              entropies: l.entropy,
            },
            { epsilon: 0.2, beta: 0.04, lossType: 'grpo', maxCompletionTokens: n, totalSequences: G },
          );
          for (const k of ['tokens', 'kl', 'clipped', 'ratio'] as const) out.sums[k].dataSync();
          entropy = tf.sum(tf.mul(l.entropy, l.mask)).dataSync()[0] / (G * n);
          return out.loss;
        },
      },
    ],
    s.vars,
  );
  const loss = values.reduce((a: number, v: { dataSync(): Float32Array }) => a + v.dataSync()[0], 0);
  tf.dispose(values);
  const clipped = clipGradientsByGlobalNorm(grads, 1);
  s.optimizer.apply(clipped.grads);
  if (s.syncLora) s.sampler.syncLora();
  for (const t of Object.values(clipped.grads)) (t as { dispose(): void }).dispose();
  ref.dispose();
  phase();
  const d = (i: number) => (w[i + 1] - w[i]) / 1000;
  const dc = (i: number) => c[i + 1] - c[i];
  return {
    rollout: d(0),
    reference: d(1),
    update: d(2),
    total: (w[3] - w[0]) / 1000,
    cpu: { rollout: dc(0), reference: dc(1), update: dc(2), total: c[3] - c[0] },
    loss,
    gradNorm: clipped.norm as number,
    entropy,
    numTensors: tf.memory().numTensors as number,
  };
}

/** The median of a list of numbers. */
export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
