// `metrl view` in a real browser: headless Chromium (Debian's `chromium`, tests/helpers/chromium.ts) drives the page
// the real binary serves. The page loads, the curves render with the run's values, the samples show the action images
// and the chess board diff, filters work, a deleted run is said on the page, and rows a running `metrl train` writes
// appear without a reload. Set METRL_VIEW_SCREENSHOTS=DIR to keep the screenshots (they are taken either way).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { metrl, scratchDir } from './helpers.ts';
import { startMetrl } from '../helpers/metrl-process.ts';
import { launchChromium, type Browser, type Page } from '../helpers/chromium.ts';
import { chessRun, type ChessRun } from '../eval/view-fixtures.ts';

const shots = process.env.METRL_VIEW_SCREENSHOTS;

async function screenshot(page: Page, name: string): Promise<void> {
  const png = await page.screenshot();
  expect(png.subarray(1, 4).toString()).toBe('PNG');
  if (shots) {
    mkdirSync(shots, { recursive: true });
    writeFileSync(join(shots, `${name}.png`), png);
  }
}

/** Choose a value in one of the page's selects, as a user would. */
function choose(page: Page, id: string, value: string): Promise<unknown> {
  return page.evaluate(
    `(() => { const s = document.getElementById(${JSON.stringify(id)}); s.value = ${JSON.stringify(value)}; s.dispatchEvent(new Event('change')); })()`,
  );
}

/** "step: 5; accuracy: 0.5; series: image (trained); …" labels of the drawn accuracy points, as {step, accuracy, series}. */
const DRAWN_POINTS = `[...document.querySelectorAll('#curves [aria-label]')].map((e) => e.getAttribute('aria-label'))
  .map((l) => /^step: (\\d+); accuracy: ([\\d.]+); series: ([^;]+);/.exec(l)).filter(Boolean)
  .map((m) => ({ step: Number(m[1]), accuracy: Number(m[2]), series: m[3] }))`;

const evalRows = (dir: string) =>
  readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((r) => r.type === 'eval');

describe('metrl view in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  it('shows the curves, the images, the chess board diff and the filters; says when a run is deleted', async () => {
    const root = scratchDir('view-browser');
    const chess: ChessRun = await chessRun(join(root, 'chess-image'));
    // An evaluation folder (the random baseline needs no model): chess rows in both modalities.
    const evaluation = await metrl([
      'evaluate',
      '--model',
      'baseline:random',
      '--domain',
      'chess',
      '--modality',
      'text,image',
      '--actions',
      '2',
      '--n',
      '2',
      '--out',
      join(root, 'eval'),
    ]);
    expect(evaluation.code, evaluation.stderr).toBe(0);
    const view = await startMetrl(['view', chess.dir, join(root, 'eval'), '--port', '0']);
    const page = await browser.newPage();
    await page.navigate(view.url);
    await page.waitFor(
      `window.metrlView.updates > 0 && document.querySelectorAll('#samples tr.sample').length === 3`,
      'the samples table',
    );

    // The curves: every test accuracy of metrics.jsonl is a drawn point.
    const drawn = await page.evaluate<Array<{ step: number; accuracy: number; series: string }>>(DRAWN_POINTS);
    const expected = evalRows(chess.dir).map((r) => ({
      step: r.step,
      accuracy: r.accuracy,
      series: `${r.modality} (${r.role === 'train' ? 'trained' : 'transfer'})`,
    }));
    expect(drawn.map((p) => ({ ...p, accuracy: Number(p.accuracy.toFixed(6)) }))).toEqual(
      expect.arrayContaining(expected.map((p) => ({ ...p, accuracy: Number(p.accuracy.toFixed(6)) }))),
    );
    expect(drawn.length).toBeGreaterThanOrEqual(expected.length);

    // The images the model saw, loaded and 64 px wide (the built-in model's size), and the board diff.
    await page.waitFor(
      `[...document.querySelectorAll('#samples img.action')].every((i) => i.complete && i.naturalWidth > 0)`,
      'the action images to load',
    );
    const images = await page.evaluate<number[]>(
      `[...document.querySelectorAll('#samples img.action')].map((i) => i.naturalWidth)`,
    );
    expect(images.length).toBe(2 * chess.actions); // two episodes; the two completions of one share its prompt
    expect(new Set(images)).toEqual(new Set([64]));
    const wrong = await page.evaluate<number[]>(
      `[...document.querySelectorAll('#samples tr.sample')].map((tr) => tr.querySelectorAll('.board .sq.wrong').length)`,
    );
    expect(wrong).toEqual([chess.wrongSquares, 0, 64]); // newest step first: the partly wrong answer, the exact one, the unparsed one
    await screenshot(page, 'view-chess');

    // Filters: reward, then step; an evaluation folder's rows per modality.
    await choose(page, 'f-reward', 'invalid');
    await page.waitFor(`document.querySelectorAll('#samples tr.sample').length === 1`, 'the reward filter');
    expect(await page.evaluate(`document.querySelector('#samples tr.sample .score').textContent`)).toMatch(
      /invalid: no answer parsed/,
    );
    await choose(page, 'f-reward', 'all');
    await choose(page, 'f-group', '1');
    await page.waitFor(`document.querySelectorAll('#samples tr.sample').length === 2`, 'the step filter');
    await choose(page, 'f-folder', '1');
    await page.waitFor(
      `document.getElementById('f-group-label').textContent === 'setting' && document.querySelectorAll('#samples tr.sample').length === 4`,
      "the evaluation's rows",
    );
    await choose(page, 'f-modality', 'image');
    await page.waitFor(
      `document.querySelectorAll('#samples tr.sample').length === 2 && document.querySelectorAll('#samples .board').length === 4`,
      'the modality filter',
    );
    expect(await page.evaluate(`document.getElementById('evaluations').textContent`)).toMatch(
      /chess\/image\/T2\/zero-shot/,
    );
    await screenshot(page, 'view-eval');

    // A run deleted while viewed: the page says so, the server keeps going.
    rmSync(chess.dir, { recursive: true });
    await page.waitFor(
      `document.querySelector('#folders li.gone')?.textContent.includes('no longer exists')`,
      'the deleted-run message',
    );
    expect(view.child.exitCode).toBeNull();
    expect(page.errors).toEqual([]);
    rmSync(root, { recursive: true, force: true });
  }, 120_000);

  it('shows the rows a running `metrl train` writes, without a reload', async () => {
    const root = scratchDir('view-live');
    const run = join(root, 'shell-image');
    const train = startMetrl(
      [
        'train',
        '--domain',
        'shell',
        '--modality',
        'image',
        '--steps',
        '3',
        '--test-size',
        '4',
        '--eval-every',
        '3',
        '--out',
        run,
        '--quiet',
      ],
      { waitForUrl: false },
    );
    const until = Date.now() + 60_000;
    while (!existsSync(join(run, 'config.json'))) {
      if (Date.now() > until) throw new Error(`train wrote no config.json in 60 s: ${(await train).stderr()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const view = await startMetrl(['view', run, '--port', '0']);
    const page = await browser.newPage();
    await page.navigate(view.url);
    await page.waitFor('window.metrlView.updates > 0', 'the first update');
    const trainRows = `(window.metrlView.curves?.vconcat[1].data.values.length ?? 0)`;
    const first = await page.evaluate<number>(trainRows);
    expect(first).toBeLessThan(3);
    // The run's last step and its final evaluation reach the page by polling.
    await page.waitFor(
      `${trainRows} === 3 && (${DRAWN_POINTS}).some((p) => p.step === 3)`,
      'step 3 on the page',
      150_000,
    );
    const drawn = await page.evaluate<Array<{ step: number; accuracy: number }>>(DRAWN_POINTS);
    for (const row of evalRows(run).filter((r) => r.step === 3))
      expect(drawn.some((p) => p.step === 3 && Math.abs(p.accuracy - row.accuracy) < 1e-9)).toBe(true);
    await page.waitFor(
      `document.querySelectorAll('#samples img.action').length > 0 && [...document.querySelectorAll('#samples img.action')].every((i) => i.complete && i.naturalWidth > 0)`,
      'the shell images',
    );
    expect(await page.evaluate('window.metrlView.updates')).toBeGreaterThan(1);
    await screenshot(page, 'view-live');
    expect(page.errors).toEqual([]);
    rmSync(root, { recursive: true, force: true });
  }, 240_000);
});
