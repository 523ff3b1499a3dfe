// The report: per-setting summaries from result rows (errors and missing items counted apart from the accuracy) and
// the markdown table in the paper's layout, several runs side by side.
import { describe, expect, it } from 'vitest';
import { shellEnv } from '../../envs/shell/index.ts';
import type { Domain } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import { buildReport, renderTable } from '../../eval/report.ts';
import { expandSettings, settingKey } from '../../eval/settings.ts';
import type { ItemRow, Setting } from '../../eval/types.ts';

const envs = new Map<Domain, Env>([['shell', shellEnv]]);
const settings = expandSettings(
  {
    domains: ['shell'],
    modalities: ['text', 'image'],
    imageRatios: null,
    actions: [10],
    prompts: ['zero-shot', 'cot'],
    shots: null,
    task: 'track',
    cascade: false,
  },
  envs,
);

function rows(setting: Setting, outcomes: Array<'right' | 'wrong' | 'invalid' | 'error'>): ItemRow[] {
  return outcomes.map((o, i) => ({
    id: `${settingKey(setting)}|e${i}`,
    setting: settingKey(setting),
    episode_id: `e${i}`,
    domain: 'shell',
    modality: setting.modality,
    task: 'track',
    prompt: setting.prompt,
    actions: 10,
    image_ratio: setting.imageRatio,
    initial_state: '1',
    target: '2',
    response: o === 'error' ? null : o === 'right' ? 'FINAL ANSWER: 2' : o === 'wrong' ? 'FINAL ANSWER: 3' : 'dunno',
    reward: o === 'error' ? null : o === 'right' ? 1 : 0,
    valid: o === 'error' ? null : o !== 'invalid',
    prediction: o === 'right' ? '2' : o === 'wrong' ? '3' : null,
    metrics: o === 'error' ? null : { exact: o === 'right' },
    status: o === 'error' ? 'error' : 'ok',
    usage: { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105 },
    error: o === 'error' ? 'HTTP 400: bad' : null,
    latency_ms: 1,
    attempts: 1,
  }));
}

describe('report', () => {
  it('summarises each setting, keeping errors and missing items out of the accuracy', () => {
    const [zeroText, zeroImage, cotText, cotImage] = settings;
    const all = [
      ...rows(zeroText, ['right', 'right', 'wrong', 'invalid']),
      ...rows(zeroImage, ['right', 'error', 'wrong']),
      ...rows(cotText, ['right', 'right', 'right', 'right']),
      ...rows(cotImage, ['wrong', 'wrong']),
    ];
    const items = new Map(settings.map((s) => [settingKey(s), 4]));
    const report = buildReport('model-a', false, settings, items, all, envs);
    const byKey = new Map(report.settings.map((s) => [s.key, s]));
    expect(byKey.get(settingKey(zeroText))!.summary).toMatchObject({ count: 4, accuracy: 0.5, invalid: 1 });
    expect(byKey.get(settingKey(zeroImage))).toMatchObject({
      errors: 1,
      missing: 1,
      summary: { count: 2, accuracy: 0.5 },
    });
    expect(byKey.get(settingKey(cotImage))!.missing).toBe(2);
    expect(report.complete).toBe(false);
    expect(report.usage.total_tokens).toBe(13 * 105);

    const baseline = buildReport(
      'baseline:random',
      true,
      [zeroText],
      new Map([[settingKey(zeroText), 2]]),
      rows(zeroText, ['right', 'wrong']),
      envs,
    );
    const table = renderTable([baseline, report]).split('\n');
    expect(table[0]).toBe('| Setting | Model | Shell Text | Shell Image |');
    expect(table[2]).toMatch(/^\| Baseline \| baseline:random \| 50\.0 ± \d+\.\d \(0 invalid\) \|  \|$/);
    expect(table[3]).toMatch(
      /^\| zero-shot \| model-a \| 50\.0 ± \d+\.\d \(1 invalid\) \| 50\.0 ± \d+\.\d \(0 invalid, 1 errors, 1 missing\) \|$/,
    );
    expect(table[4]).toMatch(
      /^\| cot \| model-a \| 100\.0 ± \d+\.\d \(0 invalid\) \| 0\.0 ± \d+\.\d \(0 invalid, 2 missing\) \|$/,
    );
    expect(table.join('\n')).toMatch(/Incomplete: some items failed or were not reached/);
  });
});
