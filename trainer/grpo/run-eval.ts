// The run's evaluations, the evaluate part of TRL's _maybe_log_save_evaluate: the Game Start baseline,
// logged once at step 0; and greedy accuracy on the fixed test split in the trained and the transfer modality
// (periodic-eval.ts) at step 0, every evalEvery steps and at the last step, each modality's row written to
// metrics.jsonl as soon as it is known.
import { appendJsonl } from '../../core/files.ts';
import { evaluateSplitStepwise, gameStartBaseline } from '../periodic-eval.ts';
import type { BaselineRow, EvalRow } from '../logs/metrics.ts';
import type { Run } from './run.ts';
import type { RunState } from './run-state.ts';

/** Give the event loop a turn (a Ctrl-C handler, a progress redraw): the loop's work is otherwise synchronous. */
export function letEventsThrough(): Promise<void> {
  return new Promise((done) => setImmediate(done));
}

/** Step 0, every evalEvery steps and the last step. */
export function evaluationDue(run: Run, step: number): boolean {
  return step === 0 || step % run.config.evalEvery === 0 || step === run.config.steps;
}

/** The Game Start baseline on the test split, logged once at the start of a run. */
export function logBaseline(run: Run): void {
  const baseline: BaselineRow = {
    type: 'baseline',
    step: 0,
    name: 'game-start',
    ...gameStartBaseline(run.env, run.testEpisodes),
  };
  appendJsonl(run.metricsPath, [baseline]);
  run.setup.onEvent?.({ kind: 'baseline', row: baseline });
}

/**
 * Greedy accuracy on the fixed test split, in the trained and the transfer modality. Each modality's row is written as
 * soon as it is known; progress is reported after every decoding batch, and signals get through between batches.
 */
export async function evaluate(run: Run, state: RunState, atStep: number): Promise<void> {
  const { env, sampler } = run;
  // Modalities evaluated at this step before an interruption are not evaluated again.
  const pending = run.testSets.filter(
    ({ modality }) => !(atStep === state.step && state.logged.has(`eval:${modality}`)),
  );
  if (pending.length === 0) return;
  const rows: EvalRow[] = [];
  for (const { modality, role, items } of pending) {
    const steps = evaluateSplitStepwise(sampler, env, items, modality, run.maxCompletionTokens, (text) =>
      sampler.responseOf(env, text),
    );
    run.setup.onEvent?.({ kind: 'eval-progress', step: atStep, modality, role, done: 0, total: items.length });
    let next = steps.next();
    while (!next.done) {
      run.setup.onEvent?.({ kind: 'eval-progress', step: atStep, modality, role, ...next.value });
      await letEventsThrough();
      next = steps.next();
    }
    const e = next.value;
    const row: EvalRow = {
      type: 'eval',
      step: atStep,
      modality,
      role,
      n: e.n,
      accuracy: e.accuracy,
      low: e.low,
      high: e.high,
      exactRate: e.exactRate,
      validRate: e.validRate,
      seconds: e.seconds,
    };
    // Written as soon as it is known, so that a stop during the next modality keeps this one.
    appendJsonl(run.metricsPath, [row]);
    rows.push(row);
  }
  state.evals.push(...rows);
  run.setup.onEvent?.({ kind: 'eval', rows });
}
