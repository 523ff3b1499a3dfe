// `metrl train`'s progress on stderr: a bar per phase on a terminal (the steps, each evaluation), with
// the run's ETA; plain lines otherwise. It reads the TrainEvents train() reports and nothing else.
import cliProgress from 'cli-progress';
import type { TrainConfig } from '../trainer/config.ts';
import type { TrainEvent } from '../trainer/grpo/loop.ts';
import type { EvalRow } from '../trainer/logs/metrics.ts';

const fmt = (x: number | null | undefined, digits = 3) => (x === null || x === undefined ? '–' : x.toFixed(digits));
const evalText = (r: EvalRow) =>
  `${r.modality} (${r.role === 'train' ? 'trained' : 'transfer'}) ${fmt(r.accuracy)} [${fmt(r.low)}, ${fmt(r.high)}]`;

/** "3h05m", "12m30s", "45s"; "–" when unknown. */
function duration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '–';
  const s = Math.max(0, Math.round(seconds));
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

/**
 * Progress on stderr: on a terminal one bar that counts training steps, and during an evaluation (step 0 and every
 * evalEvery steps) the evaluation's items, with the run's ETA counting both the remaining steps and the remaining
 * evaluations; the last checkpoint is shown in the bar. Plain lines otherwise (an evaluation line at most every 10 s).
 */
export function progressView(config: TrainConfig, modality: string, log: (line: string) => void) {
  const tty = process.stderr.isTTY === true;
  const bar = tty
    ? new cliProgress.SingleBar(
        {
          format:
            '{phase} {bar} {value}/{total} ETA {eta_formatted} | reward {reward} | valid {valid} | test {test} | {sps}s/step | {ckpt} | run ETA {runEta}',
          hideCursor: true,
          stream: process.stderr,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  let started = false;
  let payload = {
    phase: 'GRPO step',
    reward: '–',
    valid: '–',
    test: '–',
    sps: '–',
    ckpt: 'no checkpoint yet',
    runEta: '–',
  };
  let step = 0;
  let testEpisodes = 0;
  let modalities = 2;
  const stepSeconds: number[] = [];
  let itemSeconds: number | null = null; // measured during evaluations
  let evalStarted = 0;
  let evalDoneAtStart = 0;
  let lastPlain = 0;

  /** Evaluations still due after `step` (each of `modalities` × testEpisodes items). */
  const evalsAfter = (from: number) => {
    let n = 0;
    for (let s = from + 1; s <= config.steps; s++) if (s % config.evalEvery === 0 || s === config.steps) n++;
    return n;
  };
  const runEta = (evalItemsLeft: number) => {
    const perStep = stepSeconds.length > 0 ? stepSeconds.reduce((a, b) => a + b, 0) / stepSeconds.length : null;
    const perItem = itemSeconds;
    if (perStep === null && config.steps > step) return null;
    if (perItem === null) return null;
    return (
      (config.steps - step) * (perStep ?? 0) + (evalItemsLeft + evalsAfter(step) * modalities * testEpisodes) * perItem
    );
  };
  let drawnPhase = '';
  const redraw = (value: number, total: number) => {
    if (!bar) return;
    // A new phase (the steps, an evaluation of one modality) gets a bar of its own, so that its ETA is its own; the
    // finished one stays on screen above it.
    if (started && drawnPhase !== payload.phase) {
      bar.stop();
      started = false;
    }
    drawnPhase = payload.phase;
    if (!started) {
      bar.start(total, value, payload);
      started = true;
    } else {
      bar.setTotal(total);
      bar.update(value, payload);
    }
  };

  const onEvent = (event: TrainEvent) => {
    switch (event.kind) {
      case 'start':
        step = event.fromStep;
        testEpisodes = event.testEpisodes;
        modalities = event.evaluatedModalities;
        if (event.fromStep >= event.steps) {
          log(`the run is complete at step ${event.fromStep}; pass a larger --steps with --resume to continue it`);
          break;
        }
        log(
          `training ${modality} on ${event.trainEpisodes} episodes, testing on ${event.testEpisodes} in ${event.evaluatedModalities} modalities; steps ${event.fromStep + 1}-${event.steps}; completions up to ${event.maxCompletionTokens} tokens`,
        );
        break;
      case 'eval-progress': {
        const now = performance.now();
        if (event.done === 0) {
          evalStarted = now;
          evalDoneAtStart = 0;
        } else if (now > evalStarted) itemSeconds = (now - evalStarted) / 1000 / (event.done - evalDoneAtStart);
        const left = event.total - event.done;
        const itemsLeft = left + (event.role === 'train' && modalities > 1 ? testEpisodes : 0);
        payload = {
          ...payload,
          phase: `eval step ${event.step}, ${event.modality} (${event.role === 'train' ? 'trained' : 'transfer'}) items`,
          runEta: duration(runEta(itemsLeft)),
        };
        if (bar) redraw(event.done, event.total);
        else if (event.done === event.total || now - lastPlain > 10_000) {
          lastPlain = now;
          log(
            `eval step ${event.step} ${event.modality}: ${event.done}/${event.total} items, run ETA ${payload.runEta}`,
          );
        }
        break;
      }
      case 'step': {
        const r = event.row;
        step = r.step;
        stepSeconds.push(r.time.total);
        if (stepSeconds.length > 20) stepSeconds.shift();
        payload = {
          ...payload,
          phase: 'GRPO step',
          reward: fmt(r.rewardMean, 2),
          valid: fmt(r.validRate, 2),
          sps: fmt(r.time.total, 1),
          runEta: duration(runEta(0)),
        };
        if (bar) redraw(r.step, config.steps);
        else
          log(
            `step ${r.step}/${config.steps} reward ${fmt(r.rewardMean)} ± ${fmt(r.rewardStd)} valid ${fmt(r.validRate, 2)} kl ${fmt(r.kl, 4)} clip ${fmt(r.clipFraction, 3)} len ${fmt(r.completionLength, 1)} zero-spread ${r.zeroSpreadGroups}/${r.groups} ${fmt(r.time.total, 1)}s, run ETA ${payload.runEta}`,
          );
        break;
      }
      case 'eval': {
        const trained = event.rows.find((r) => r.role === 'train');
        payload = { ...payload, phase: 'GRPO step', test: trained ? fmt(trained.accuracy, 2) : payload.test };
        const line = `eval step ${event.rows[0]?.step}: ${event.rows.map(evalText).join('; ')}`;
        if (bar && started) {
          // The result line goes above the bar, which then counts steps again.
          bar.stop();
          started = false;
          log(line);
          if (step < config.steps) redraw(step, config.steps);
        } else log(line);
        break;
      }
      case 'baseline':
        if (bar && started) {
          bar.stop();
          started = false;
        }
        log(
          `Game Start baseline on the test split (answer = initial state): ${fmt(event.row.accuracy)} [${fmt(event.row.low)}, ${fmt(event.row.high)}] (n = ${event.row.n})`,
        );
        break;
      case 'nan':
        log(`step ${event.step}: loss not finite, update skipped (${event.streak} in a row)`);
        break;
      case 'learner-open':
        log(`learner sessions opened in ${event.seconds.toFixed(1)} s (before step ${step + 1}, outside its time)`);
        break;
      case 'checkpoint':
        payload = { ...payload, ckpt: `checkpoint step-${event.step}` };
        if (bar && started) bar.update(payload);
        if (!bar) log(`checkpoint: ${event.dir}`);
        break;
    }
  };
  return { onEvent, stop: () => bar?.stop() };
}
