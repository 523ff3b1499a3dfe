// Learning is shown, not assumed, for Hugging Face checkpoints: a tiny HF-format Llama (random init,
// written with metrl's own writer, models/hf/write-checkpoint.ts) is supervised briefly to a weak base, saved again
// with the writer, then trained with LoRA GRPO through trainer/grpo/loop.ts on shell-game episodes; its reward on held-out
// (test split) episodes rises beyond the 95% intervals. The same task as the built-in model's learning test
// (tests/trainer/grpo/learning.test.ts): the supervised answers are the reference answer "FINAL ANSWER: <n>" with a stray
// "x" after the digit 70% of the time ("FINAL ANSWER: 2x" is not a valid answer, so it scores 0), the way an
// under-trained model gets the format wrong; GRPO, rewarded only by the environment's scorer, learns to end its answer
// after the digit. Three swaps make the ball's end position uniform whatever the start, so no shortcut lifts the
// reward. The policy shows the environment's reference wording through the checkpoint's chat template; the template
// here keeps only the initial state and the moves (the full wording is ~750 byte tokens, too long for a test on a CPU).
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Episode } from '../../../core/episode.ts';
import { Rng } from '../../../core/rng.ts';
import { wilsonInterval } from '../../../core/stats.ts';
import { generateEpisodes } from '../../../envs/generate.ts';
import { shellEnv } from '../../../envs/shell/index.ts';
import { initBackend } from '../../../models/backend.ts';
import { parseHfConfig } from '../../../models/hf/config.ts';
import { HfPolicy } from '../../../models/hf/policy.ts';
import { decoderTensors, randomDecoderTensors, writeHfCheckpoint } from '../../../models/hf/write-checkpoint.ts';
import { LLAMA_LAYOUT, llamaConfigJson } from '../../../models/llama/language-model.ts';
import type { Policy } from '../../../models/policy.ts';
import { HF_ARCHITECTURES, loadBaseModel } from '../../../models/registry.ts';
import { finalAnswerResponse } from '../../../rewards/final-answer.ts';
import { AdamW } from '../../../trainer/adamw.ts';
import { resolveConfig } from '../../../trainer/config.ts';
import { loadTrainingPolicy, train } from '../../../trainer/grpo/loop.ts';
import { writeByteTokenizer } from '../../helpers/byte-tokenizer.ts';

const EOS = 245;
const JSON_CONFIG = llamaConfigJson({
  vocabSize: 256,
  hiddenSize: 32,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  intermediateSize: 64,
  maxPositionEmbeddings: 256,
  bosTokenId: EOS,
  eosTokenId: EOS,
});

/**
 * The shell prompt's state and moves ("3\n1 swap 3\n1 swap 2\n"), then "A:". Other messages (the loader's probe)
 * are written as they are.
 */
const COMPACT_SHELL_TEMPLATE =
  "{% for message in messages %}{% set c = message.content %}{% if 'The initial state is: ' in c %}" +
  "{{ c.split('The initial state is: ')[1].split('\\nNow what')[0].replace('Here are the moves played:', '') }}" +
  '{% else %}{{ c }}{% endif %}{% endfor %}{% if add_generation_prompt %}A:{% endif %}';

/** A checkpoint folder: config.json + model.safetensors (the writer), a byte tokenizer with EOS, the template above. */
function writeFolder(dir: string, tensors: Parameters<typeof writeHfCheckpoint>[2]): string {
  writeHfCheckpoint(dir, JSON_CONFIG, tensors);
  writeByteTokenizer(dir, { specials: { '<|end|>': EOS }, chatTemplate: COMPACT_SHELL_TEMPLATE });
  writeFileSync(
    join(dir, 'generation_config.json'),
    JSON.stringify({ bos_token_id: EOS, eos_token_id: EOS, pad_token_id: EOS }),
  );
  return dir;
}

/** Random init → 30 AdamW steps of next-token cross-entropy on train-split answers, 70% with a stray "x"; saved. */
async function supervisedBase(root: string): Promise<string> {
  const random = writeFolder(
    join(root, 'random'),
    randomDecoderTensors(parseHfConfig(JSON_CONFIG, HF_ARCHITECTURES).text, LLAMA_LAYOUT, new Rng(1, 'init')),
  );
  const policy = (await loadBaseModel(random)) as HfPolicy;
  const episodes = generateEpisodes(shellEnv, { n: 200, actions: 3, split: 'train', seed: 0, modality: 'text' });
  const variables = policy.trainableVariables('base');
  const optimizer = new AdamW(variables, {
    learningRate: 1e-2,
    beta1: 0.9,
    beta2: 0.999,
    epsilon: 1e-8,
    weightDecay: 0,
  });
  const rng = new Rng(0, 'sft');
  const answer = (text: string) => [...policy.kit.tokenizer.encode(text, { addSpecialTokens: false }), EOS];
  for (let step = 0; step < 30; step++) {
    const batch = rng.sample(episodes, 32).map((e) => ({
      prompt: policy.prompt(shellEnv, e),
      completion: answer(finalAnswerResponse(e.target) + (rng.next() < 0.7 ? 'x' : '')),
    }));
    const tokens = batch.reduce((n, item) => n + item.completion.length, 0);
    const { value, grads } = tf.variableGrads(() => {
      const lp = policy.tokenLogProbs(batch, { useLora: false });
      return tf.div(tf.neg(tf.sum(tf.mul(lp.logProbs, lp.mask))), tokens) as tf.Scalar;
    }, variables);
    value.dispose();
    optimizer.apply(grads);
    tf.dispose(Object.values(grads));
  }
  optimizer.dispose();
  const base = writeFolder(join(root, 'base'), decoderTensors(policy.decoder));
  policy.dispose();
  return base;
}

/** Reward, valid rate and correct count of 8 sampled completions (temperature 1) per held-out episode. */
function sampledReward(policy: Policy, episodes: Episode[], maxNewTokens: number) {
  const rng = new Rng(9, 'measure');
  let correct = 0;
  let valid = 0;
  let n = 0;
  for (const e of episodes) {
    for (const c of policy.sampleGroup(policy.prompt(shellEnv, e), 8, { temperature: 1, topP: 1, maxNewTokens }, rng)) {
      const score = shellEnv.score({ target: e.target, response: policy.responseOf(shellEnv, c.text) });
      correct += score.reward;
      valid += score.valid ? 1 : 0;
      n++;
    }
  }
  return { reward: correct / n, valid: valid / n, correct, n };
}

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe('GRPO learning (tiny Hugging Face Llama, shell game)', () => {
  it('raises the reward on held-out test episodes beyond the 95% interval', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-hf-learn-'));
    const base = await supervisedBase(root);
    const maxCompletionTokens = 18; // "FINAL ANSWER: 2x" and EOS are 17 tokens
    const config = resolveConfig(
      {},
      {
        trainSize: 60,
        actions: 3,
        testSize: 4,
        steps: 15,
        promptsPerStep: 8,
        groupSize: 8,
        gradientAccumulation: 1,
        maxCompletionTokens,
        learningRate: 0.01,
        beta: 0,
        loraRank: 8,
        loraAlpha: 16,
        evalEvery: 100,
        checkpointEvery: 100,
        temperature: 1,
      },
    );
    const setup = await loadTrainingPolicy(base, config);
    expect(setup.policy).toBeInstanceOf(HfPolicy);
    const prompt = setup.policy.prompt(
      shellEnv,
      generateEpisodes(shellEnv, { n: 1, actions: 3, split: 'test', seed: 5, modality: 'text' })[0],
    );
    expect(prompt.tokens.length).toBeLessThan(40); // the compact template is in use
    const heldOut = generateEpisodes(shellEnv, { n: 30, actions: 3, split: 'test', seed: 5, modality: 'text' });
    const trainedOn = new Set(
      generateEpisodes(shellEnv, {
        n: config.trainSize,
        actions: 3,
        split: 'train',
        seed: config.seed,
        modality: 'text',
      }).map((e) => e.id),
    );
    expect(heldOut.some((e) => trainedOn.has(e.id))).toBe(false);

    const before = sampledReward(setup.policy, heldOut, maxCompletionTokens);
    await train({ env: shellEnv, ...setup, config, modality: 'text', runDir: join(root, 'run'), resume: false });
    const after = sampledReward(setup.policy, heldOut, maxCompletionTokens);
    setup.policy.dispose();
    rmSync(root, { recursive: true, force: true });

    console.info(
      `HF Llama held-out sampled reward ${before.reward.toFixed(3)} → ${after.reward.toFixed(3)}, valid ${before.valid.toFixed(2)} → ${after.valid.toFixed(2)} (n = ${after.n})`,
    );
    // Reward rises by more than the 95% intervals allow for chance: the intervals do not overlap.
    expect(wilsonInterval(after.correct, after.n)!.low).toBeGreaterThan(wilsonInterval(before.correct, before.n)!.high);
    expect(after.valid).toBeGreaterThan(before.valid + 0.3);
  }, 300_000);
});
