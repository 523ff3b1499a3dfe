// Supervised pretraining of the base checkpoint: batches are a pure function of the step and hold one (domain, skill)
// pair, the schedule warms up then decays, and a run stopped mid-way and resumed ends with
// exactly the weights of an uninterrupted run (the resumed run sees the same batches and optimiser state).
import { actionLabel } from '../../../models/builtin/template.ts';
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../../models/backend.ts';
import { chessEnv } from '../../../envs/chess/index.ts';
import { shellEnv } from '../../../envs/shell/index.ts';
import { MAX_LISTED_ACTIONS, PretrainConfigSchema } from '../../../trainer/pretrain/config.ts';
import { MAX_PERCEPTION_IMAGES, pretrainBatch, trackingExample } from '../../../trainer/pretrain/data.ts';
import { learningRateAt, pretrain } from '../../../trainer/pretrain/pretrain.ts';

const envs = [chessEnv, shellEnv];
const tiny = PretrainConfigSchema.parse({
  architecture: { dModel: 16, nLayers: 1, nHeads: 2, dMlp: 32 },
  steps: 4,
  batchSize: 10, // more than one learner chunk of 8: the chunked gradient path, text-only batches included
  evalEvery: 100,
  evalSize: 2,
  checkpointEvery: 2,
  learningRate: 0.01,
  warmupSteps: 1,
});

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe('pretraining batches', () => {
  it('are a pure function of the step, one domain and skill each, with the right targets', () => {
    let partials = 0;
    let imageLines = 0;
    let withPrefix = 0;
    for (let step = 1; step <= 12; step++) {
      const batch = pretrainBatch(envs, tiny, step);
      expect(pretrainBatch(envs, tiny, step)).toEqual(batch);
      expect(new Set(batch.map((ex) => `${ex.domain}/${ex.kind}`)).size).toBe(1);
      for (const ex of batch) {
        if (ex.kind === 'perception') {
          const images = ex.input.filter((p) => p.type === 'image').length;
          expect(images).toBeGreaterThanOrEqual(1);
          expect(images).toBeLessThanOrEqual(MAX_PERCEPTION_IMAGES);
          if (images > 1) {
            // The asked label is one of the shown ones: "<domain>\nread\nA: " opens the labels, "<label j>: " ends the prompt.
            expect((ex.input[0] as { text: string }).text).toMatch(/read\nA: $/);
            const asked = /\n([A-Z]+): $/.exec((ex.input[ex.input.length - 1] as { text: string }).text)![1];
            expect(Array.from({ length: images }, (_, i) => actionLabel(i))).toContain(asked);
          } else expect((ex.input[ex.input.length - 1] as { text: string }).text).toBe('\nFINAL ANSWER: ');
          expect(ex.target).toMatch(ex.domain === 'chess' ? /^[a-h][1-8][a-h][1-8][qrbn]?$/ : /^[1-3] swap [1-3]$/);
        } else {
          // Images stand in for action texts: read the layout with each image as "<img>". The "trace" cue is followed by
          // line 0 (the initial state) and, in a partial trace, may carry a prefix of the trace.
          const [promptText, traceText] = ex.input
            .map((p) => (p.type === 'text' ? p.text : '<img>'))
            .join('')
            .split('trace\n');
          const lines = promptText.split('\n');
          const actions = lines.length - 3; // domain, state, actions…, ""
          const [startLine, ...prefix] = traceText.split('\n').slice(0, -1);
          expect(startLine).toBe(`start -> ${ex.domain === 'chess' ? lines[1].split(' ')[0] : lines[1]}`);
          const traced = ex.target.split('\n');
          if (ex.ends) {
            // A whole trace: text actions only, every action traced, then the answer.
            expect(ex.input.every((p) => p.type === 'text')).toBe(true);
            expect(prefix).toEqual([]);
            expect(actions).toBeLessThanOrEqual(tiny.maxTrackActions);
            expect(traced).toHaveLength(actions + 1);
            expect(traced[actions]).toMatch(/^FINAL ANSWER: \S/);
          } else {
            // A partial trace: a longer list, 1..maxTrackActions lines taught after a prefix, never the answer.
            expect(actions).toBeGreaterThan(tiny.maxTrackActions);
            expect(actions).toBeLessThanOrEqual(MAX_LISTED_ACTIONS);
            expect(traced.pop()).toBe('');
            expect(traced.length).toBeGreaterThanOrEqual(1);
            expect(traced.length).toBeLessThanOrEqual(tiny.maxTrackActions);
            expect(prefix.length + traced.length).toBeLessThanOrEqual(actions);
            if (prefix.length > 0) withPrefix++;
            partials++;
          }
          // Each trace line (given or taught) restates its action: the text, or for an image what the image shows.
          [...prefix, ...traced]
            .filter((line) => !line.startsWith('FINAL'))
            .forEach((line, i) => {
              const [label, shown] = lines[2 + i].split(': ');
              expect(line.startsWith(`${label}: `)).toBe(true);
              if (shown !== '<img>') expect(line.startsWith(`${lines[2 + i]} -> `)).toBe(true);
              else imageLines++;
            });
        }
      }
    }
    expect(partials).toBeGreaterThan(0);
    expect(imageLines).toBeGreaterThan(0);
    expect(withPrefix).toBeGreaterThan(0);
  });

  it('show image actions in whole traces only when wholeImageRatio asks for them', () => {
    const config = PretrainConfigSchema.parse({ ...tiny, wholeImageRatio: 1, partialTraceShare: 0 });
    const examples = Array.from({ length: 6 }, (_, i) => trackingExample(chessEnv, `whole:${i}`, 2, config));
    for (const ex of examples) {
      expect(ex.ends).toBe(true);
      expect(ex.input.filter((p) => p.type === 'image')).toHaveLength(2);
      expect(ex.target).toMatch(/\nFINAL ANSWER: \S+/);
    }
  });

  it('end a partial trace with its last lines and the answer when partialEndShare asks for it', () => {
    const config = PretrainConfigSchema.parse({ ...tiny, partialTraceShare: 1, partialEndShare: 1 });
    for (const env of envs) {
      for (let i = 0; i < 6; i++) {
        const ex = trackingExample(env, `end:${i}`, 2, config);
        const listed =
          ex.input.filter((p) => p.type === 'image').length +
          ex.input
            .map((p) => (p.type === 'text' ? p.text : ''))
            .join('')
            .split('trace\n')[0]
            .split('\n')
            .filter((l) => /^[A-Z]+: \S/.test(l)).length;
        const given = ex.input
          .map((p) => (p.type === 'text' ? p.text : ''))
          .join('')
          .split('trace\n')[1]
          .split('\n')
          .filter((l) => l !== '' && !l.startsWith('start -> '));
        const taught = ex.target.split('\n');
        expect(ex.ends).toBe(true);
        expect(taught.at(-1)).toMatch(/^FINAL ANSWER: \S/);
        // Only 1..maxTrackActions actions are tracked by the model; the rest of the list is given as trace lines.
        expect(taught.length - 1).toBeGreaterThanOrEqual(1);
        expect(taught.length - 1).toBeLessThanOrEqual(config.maxTrackActions);
        expect(given.length + taught.length - 1).toBe(listed);
        expect(listed).toBeGreaterThan(config.maxTrackActions);
      }
    }
  });

  it('list at most maxListedActions actions in a partial trace, and refuse a limit not above maxTrackActions', () => {
    const listedActions = (
      config: ReturnType<typeof PretrainConfigSchema.parse>,
      env: typeof chessEnv,
      seed: string,
    ) => {
      const ex = trackingExample(env, seed, 2, config);
      const prompt = ex.input
        .map((p) => (p.type === 'text' ? p.text : '<img>'))
        .join('')
        .split('trace\n')[0];
      return prompt.split('\n').filter((l) => /^[A-Z]+: \S/.test(l)).length;
    };
    const short = PretrainConfigSchema.parse({ ...tiny, partialTraceShare: 1, maxListedActions: 3 });
    const long = PretrainConfigSchema.parse({ ...tiny, partialTraceShare: 1 });
    for (const env of envs) {
      const seeds = Array.from({ length: 12 }, (_, i) => `listed:${i}`);
      // maxTrackActions is 2, so a partial trace of the short config lists exactly 3 actions; the default lists 3..8.
      expect(seeds.map((s) => listedActions(short, env, s))).toEqual(seeds.map(() => 3));
      expect(Math.max(...seeds.map((s) => listedActions(long, env, s)))).toBeGreaterThan(3);
    }
    expect(() => PretrainConfigSchema.parse({ ...tiny, maxListedActions: 2 })).toThrow(/maxListedActions/);
    expect(() => PretrainConfigSchema.parse({ ...tiny, maxListedActions: MAX_LISTED_ACTIONS + 1 })).toThrow(
      /maxListedActions/,
    );
  });

  it('follow a warm-up then a cosine decay to a tenth of the peak', () => {
    const config = PretrainConfigSchema.parse({ steps: 100, warmupSteps: 10, learningRate: 1 });
    expect(learningRateAt(config, 5)).toBeCloseTo(0.5);
    expect(learningRateAt(config, 10)).toBeCloseTo(1);
    expect(learningRateAt(config, 55)).toBeCloseTo(0.55);
    expect(learningRateAt(config, 100)).toBeCloseTo(0.1);
  });
});

describe('pretrain', () => {
  it('resumed after an interruption ends with the same weights as an uninterrupted run', async () => {
    const whole = mkdtempSync(join(tmpdir(), 'metrl-pretrain-whole-'));
    const split = mkdtempSync(join(tmpdir(), 'metrl-pretrain-split-'));
    await pretrain({ envs, config: tiny, outDir: whole, resume: false, provenance: {} });
    // Stopped after step 3 with checkpoints every 2 steps, as a kill would: step 3's row is in the log, its weights are not.
    await pretrain({ envs, config: tiny, outDir: split, resume: false, provenance: {}, stopAfterStep: 3 });
    await pretrain({ envs, config: tiny, outDir: split, resume: true, provenance: {} });
    expect(readFileSync(join(split, 'model.safetensors')).equals(readFileSync(join(whole, 'model.safetensors')))).toBe(
      true,
    );
    const losses = (dir: string) =>
      readFileSync(join(dir, 'pretrain-metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .filter((r) => r.type === 'train')
        .map((r) => r.loss);
    expect(losses(split)).toEqual(losses(whole));
    expect(losses(whole)).toHaveLength(4);
  });

  it('refuses --resume where no pretraining state exists', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'metrl-pretrain-empty-'));
    await expect(pretrain({ envs, config: tiny, outDir: empty, resume: true, provenance: {} })).rejects.toThrow(
      /no pretraining checkpoint/,
    );
  });

  it('starts a second stage from an init checkpoint of the same architecture, and refuses another architecture', async () => {
    const stage1 = mkdtempSync(join(tmpdir(), 'metrl-pretrain-stage1-'));
    await pretrain({ envs, config: tiny, outDir: stage1, resume: false, provenance: {} });
    // The first step's loss is measured before its update, on the same batch in both runs: lower from the stage-1
    // weights than from a random initialisation.
    const stage2 = mkdtempSync(join(tmpdir(), 'metrl-pretrain-stage2-'));
    const second = PretrainConfigSchema.parse({ ...tiny, init: stage1, steps: 1 });
    await pretrain({ envs, config: second, outDir: stage2, resume: false, provenance: {} });
    const firstLoss = (dir: string) =>
      JSON.parse(readFileSync(join(dir, 'pretrain-metrics.jsonl'), 'utf8').split('\n')[0]).loss as number;
    const fresh = mkdtempSync(join(tmpdir(), 'metrl-pretrain-fresh-'));
    await pretrain({
      envs,
      config: PretrainConfigSchema.parse({ ...tiny, steps: 1 }),
      outDir: fresh,
      resume: false,
      provenance: {},
    });
    expect(firstLoss(stage2)).toBeLessThan(firstLoss(fresh));

    const other = PretrainConfigSchema.parse({
      ...tiny,
      init: stage1,
      architecture: { dModel: 32, nLayers: 1, nHeads: 2, dMlp: 32 },
    });
    await expect(
      pretrain({
        envs,
        config: other,
        outDir: mkdtempSync(join(tmpdir(), 'metrl-pretrain-other-')),
        resume: false,
        provenance: {},
      }),
    ).rejects.toThrow(/another architecture \(dModel/);
  });
});
