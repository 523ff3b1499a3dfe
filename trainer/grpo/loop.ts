// The GRPO training loop: train() and its public types. It reads as its phases, in the order TRL's
// GRPOTrainer runs them (_generate_and_score_completions → compute_loss → _maybe_log_save_evaluate), each in a file
// of its own:
//   run.ts                  prepareRun: episodes, prompts, completion budget, the inference engine (config.engine:
//                           tfjs, or ONNX Runtime as the Sampler beside the tfjs Learner)
//   run-state.ts            startOrResume: a fresh run, or the newest checkpoint's state (resume)
//   per step:
//     collect-groups.ts     collectGroups: rounds of rollouts (the next prompts in the data order, a group of
//                           completions each; Sampler) and rewards (the environment's score, then the reward functions
//                           of --reward, weighted); with dynamic sampling, more rounds until the step holds enough
//                           groups with a reward spread; then group-relative advantages. With --async the first
//                           round was submitted to the rollout servers ahead (rollout-queue.ts), and the next steps'
//                           rounds are submitted as soon as this step's are in, to be generated while it trains
//     reference-logprobs.ts referenceAndOldLogProbs: the learner's batch checked against what the sampler saw
//                           (integrity.ts), learner chunks with the reference (LoRA off) and old-policy log-probs
//                           (Sampler, no grad)
//     update-policy.ts      updatePolicy: μ passes of the objective (objective.ts: loss type, clipping, masks),
//                           gradients summed over the chunks, one AdamW update per pass (Learner), the Sampler's
//                           adapters synced
//     step-log.ts           logStep: metrics.jsonl and samples.jsonl rows, the NaN streak
//     run-state.ts          checkpoint, every K steps: the state that `resume` continues from, reproducing the
//                           uninterrupted run
//     run-eval.ts           evaluate, every K steps: greedy accuracy on a fixed test split in the trained and the
//                           transfer modality
// The phases share two objects: the Run (fixed for the whole run) and the RunState (what a checkpoint saves).
import { join } from 'node:path';
import type { TrainingResult, TrainingSetup, Run } from './run.ts';
import type { RunState } from './run-state.ts';
import { prepareRun } from './run.ts';
import { checkpoint, startOrResume } from './run-state.ts';
import { collectGroups, trainedRollouts } from './collect-groups.ts';
import { referenceAndOldLogProbs } from './reference-logprobs.ts';
import { updatePolicy } from './update-policy.ts';
import { logStep, sampleRows, trainRow } from './step-log.ts';
import { evaluate, evaluationDue, letEventsThrough, logBaseline } from './run-eval.ts';
import { stepObjective } from '../loss/objective.ts';
import { loadRewardFunctions } from './reward-functions.ts';
import { RolloutQueue } from './rollout-queue.ts';
import { rolloutSampling } from './collect-groups.ts';
import { staleRolloutLimit } from '../config.ts';

export { assertReadsModality, type TrainEvent, type TrainingResult, type TrainingSetup } from './run.ts';
export { loadTrainingPolicy } from './training-policy.ts';

export async function train(setup: TrainingSetup): Promise<TrainingResult> {
  // Reward modules load first: a missing file or a module without a function stops the run before any work.
  const rewards =
    setup.rewards ?? (await loadRewardFunctions(setup.config.reward, process.cwd(), setup.config.rewardTimeout));
  const run = await prepareRun(setup, rewards);
  try {
    return await trainRun(run);
  } finally {
    run.engine.dispose();
  }
}

async function trainRun(run: Run): Promise<TrainingResult> {
  const { setup } = run;
  const state = startOrResume(run);
  setup.onEvent?.({
    kind: 'start',
    fromStep: state.step,
    steps: run.config.steps,
    trainEpisodes: run.trainSet.length,
    testEpisodes: run.testEpisodes.length,
    maxCompletionTokens: run.maxCompletionTokens,
    evaluatedModalities: run.testSets.length,
    engine: run.engine.describe,
    learner: run.engine.ortLearner ? 'ONNX Runtime' : 'tfjs',
  });
  // A run can be stopped at any moment and resumed: the step-0 checkpoint comes first, and the evaluation due at the
  // step the run starts from (step 0, or a checkpoint whose evaluation was interrupted) is finished, skipping the
  // modalities whose rows are already in metrics.jsonl.
  if (!state.checkpointed) checkpoint(run, state);
  if (state.step === 0 && run.baseline && !state.logged.has('baseline')) logBaseline(run);
  if (evaluationDue(run, state.step)) await evaluate(run, state, state.step);
  state.logged.clear();
  const { config } = run;
  const stopAt = Math.min(config.steps, setup.stopAfterStep ?? Infinity);
  if (config.async) state.queue = await startQueue(run, state);
  let open = state.step < stopAt ? openLearner(run) : undefined;
  while (state.step < stopAt) {
    state.step++;
    const tStart = performance.now();
    const step = await collectGroups(run, state, state.queue ?? undefined);
    // --async: the next steps' rounds go to the servers now, to be generated while this step trains.
    await state.queue?.fill(state.step);
    const tReward = performance.now();
    const trained = trainedRollouts(step);
    const objective = stepObjective(
      config,
      trained.groups.flat().map((c) => ({ tokens: c.tokens.length, finished: c.finished })),
      run.maxCompletionTokens,
    );
    const { batches, entropyThreshold } = referenceAndOldLogProbs(run, state.step, trained, step.advantages, objective);
    const tLogprobs = performance.now();
    const promptOf = (group: number) => trained.items[group].episode.id;
    const stats = updatePolicy(run, state, batches, objective, promptOf, entropyThreshold);
    const tUpdate = performance.now();
    const row = trainRow(run, state, step, trained, stats, { tStart, tReward, tLogprobs, tUpdate, open });
    open = undefined;
    logStep(run, state, row, stats, sampleRows(run, state.step, step));
    // Checkpoint before evaluating: a run stopped during the evaluation resumes here and evaluates only what is missing.
    if (state.step % config.checkpointEvery === 0 || state.step === config.steps || state.step === stopAt)
      checkpoint(run, state);
    if (evaluationDue(run, state.step)) await evaluate(run, state, state.step);
    await letEventsThrough();
  }
  state.optimizer.dispose();
  if (run.learner !== setup.policy) run.learner.dispose(); // the ORT learner's sessions (the policy is the caller's)
  return { lastStep: state.step, evals: state.evals };
}

/**
 * The learner's sessions opened before the first step's clock (ONNX Runtime builds and optimises its training graphs
 * there: seconds that are no step's work); their seconds, or undefined for a learner that opens nothing.
 */
function openLearner(run: Run): number | undefined {
  if (!run.learner.open) return undefined;
  const t0 = performance.now();
  run.learner.open();
  const seconds = (performance.now() - t0) / 1000;
  run.setup.onEvent?.({ kind: 'learner-open', seconds });
  return seconds;
}

/**
 * --async: the queue of rounds ahead (rollout-queue.ts), holding what a resumed run's checkpoint had submitted, each
 * round again with its own prompts, seeds and adapter.
 */
async function startQueue(run: Run, state: RunState): Promise<RolloutQueue> {
  const { config } = run;
  const queue = new RolloutQueue({
    rounds: run.engine.remote!,
    trainPrompts: run.trainSet.map((item) => item.prompt),
    order: state.order,
    rng: state.rng,
    promptsPerRound: config.promptsPerStep * config.gradientAccumulation,
    groupSize: config.groupSize,
    sampling: rolloutSampling(run),
    maxStaleness: staleRolloutLimit(config),
    lastStep: config.steps,
  });
  if (state.resumedAhead) {
    const { rounds, adapters } = state.resumedAhead;
    await queue.resubmit(rounds, (version) => join(adapters, `v${version}`));
    state.resumedAhead = null;
  }
  return queue;
}
