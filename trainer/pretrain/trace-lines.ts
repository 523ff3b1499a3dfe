// Where a written trace goes wrong: line by line, did the model write the line at all, copy the action listed under
// that label, and reach the true state? A base's answer accuracy alone cannot tell a model that misreads its action
// list (the wrong action copied: a lookup failure) from one that applies an action wrongly or stops early; these counts
// can, and they are what `metrl pretrain` reports next to the accuracies.
import type { Env } from '../../envs/env.ts';
import type { Episode } from '../../core/episode.ts';
import { actionLabel, parseTraceLines } from '../../models/builtin/template.ts';

export interface TraceLineCounts {
  /** Trace lines the episode needs (its number of actions). */
  expected: number;
  /** Of them, lines the model wrote, in order, with the episode's label. */
  written: number;
  /** Lines whose action is the one listed under that label. */
  actionCopied: number;
  /** Lines whose state is the true state after that action. */
  stateCorrect: number;
}

/** Compare a trace-layout completion with the trace the episode implies (env.traceStates). */
export function traceLineCounts(
  env: Pick<Env, 'traceStates'>,
  episode: Episode,
  completionText: string,
): TraceLineCounts {
  if (!env.traceStates) throw new Error('traceLineCounts needs an environment that writes traces');
  const states = env.traceStates(episode);
  const lines = parseTraceLines(completionText);
  const counts: TraceLineCounts = { expected: episode.actions.length, written: 0, actionCopied: 0, stateCorrect: 0 };
  episode.actions.forEach((action, i) => {
    const line = lines[i];
    if (!line || line.label !== actionLabel(i)) return;
    counts.written++;
    if (line.action === action.text) counts.actionCopied++;
    if (line.state === states[i]) counts.stateCorrect++;
  });
  return counts;
}

/** Sum of counts over episodes. */
export function addTraceLineCounts(a: TraceLineCounts, b: TraceLineCounts): TraceLineCounts {
  return {
    expected: a.expected + b.expected,
    written: a.written + b.written,
    actionCopied: a.actionCopied + b.actionCopied,
    stateCorrect: a.stateCorrect + b.stateCorrect,
  };
}
