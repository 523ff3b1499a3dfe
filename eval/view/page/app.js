// metrl view's page script: draws the charts with vega and vega-lite (served by the metrl view server), lists the
// sampled completions with their images, rewards and chess board diffs, and polls /api/folders every few seconds,
// redrawing what changed (a running `metrl train` or `metrl evaluate` appends rows; no reload needed).
/* global vega, vegaLite */
'use strict';

const POLL_MS = 2000;
const PAGE = 40;
const PIECES = { K: '♔', Q: '♕', R: '♖', B: '♗', N: '♘', P: '♙', k: '♚', q: '♛', r: '♜', b: '♝', n: '♞', p: '♟' };

const state = { folders: [], stamps: '', views: [], shown: 0, rendering: Promise.resolve() };
const $ = (id) => document.getElementById(id);
/** For the browser tests: what was drawn, and when the page last finished updating. */
window.metrlView = { updates: 0, curves: null };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

async function getJson(url) {
  const res = await fetch(url, { cache: 'no-store' });
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
}

function setStatus(text, error = false) {
  $('status').textContent = text;
  $('status').className = error ? 'error' : '';
}

// ---- folders -------------------------------------------------------------------------------------------------------

function drawFolders() {
  const box = $('folders');
  box.replaceChildren();
  for (const f of state.folders) {
    const files = el(
      'span',
      { class: 'files' },
      ...f.files.map((name) => el('a', { href: `/runs/${f.index}/${encodeURIComponent(name)}`, text: name })),
    );
    const lacks = el(
      'ul',
      { class: 'messages' },
      ...f.lacks.map((l) => el('li', { class: f.stamp === 'gone' ? 'gone' : '', text: l })),
    );
    box.append(
      el(
        'div',
        { class: 'folder', 'data-kind': f.kind },
        el('span', { class: 'name', text: f.name }),
        el('span', { class: 'kind', text: f.kind === 'train' ? 'training run' : 'evaluation' }),
        ' ',
        files,
        lacks,
      ),
    );
  }
  const select = $('f-folder');
  const chosen = select.value;
  select.replaceChildren(...state.folders.map((f) => el('option', { value: String(f.index), text: f.name })));
  if (chosen !== '') select.value = chosen;
}

// ---- charts --------------------------------------------------------------------------------------------------------

async function drawSpec(container, spec) {
  const compiled = vegaLite.compile(spec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'svg', container, hover: true });
  await view.runAsync();
  state.views.push(view);
  return view;
}

async function drawCharts() {
  const charts = await getJson('/api/charts');
  for (const v of state.views) v.finalize();
  state.views = [];
  const curves = $('curves');
  curves.replaceChildren();
  window.metrlView.curves = charts.curves;
  $('curves-section').hidden = !charts.curves && charts.messages.length === 0;
  if (charts.curves) await drawSpec(curves, charts.curves);
  $('chart-messages').replaceChildren(...charts.messages.map((m) => el('li', { text: m })));
  const evals = $('evaluations');
  evals.replaceChildren();
  for (const e of charts.evaluations) {
    const chart = el('div', { class: 'eval-chart' });
    const rows = e.table.map((r) =>
      el(
        'tr',
        {},
        el('td', { text: r.setting }),
        el('td', { text: r.modality }),
        el('td', { text: String(r.n) }),
        el('td', { text: r.accuracy === null ? '–' : r.accuracy.toFixed(3) }),
        el('td', { text: r.low === null ? '–' : `[${r.low.toFixed(3)}, ${r.high.toFixed(3)}]` }),
        el('td', { text: String(r.invalid) }),
      ),
    );
    const table = el(
      'table',
      { class: 'eval-table' },
      el('tr', {}, ...['setting', 'modality', 'n', 'accuracy', '95% CI', 'invalid'].map((h) => el('th', { text: h }))),
      ...rows,
    );
    evals.append(
      el('h2', { text: `Evaluation: ${e.name}${e.final ? '' : ' (running or stopped: rows so far, no intervals)'}` }),
      table,
      chart,
    );
    if (e.spec) await drawSpec(chart, e.spec);
  }
}

// ---- samples -------------------------------------------------------------------------------------------------------

function board(squares, wrong, caption) {
  const grid = el('div', { class: 'grid' });
  for (let i = 0; i < 64; i++) {
    const light = (Math.floor(i / 8) + (i % 8)) % 2 === 0;
    const piece = squares ? squares[i] : '.';
    grid.append(
      el('div', {
        class: `sq ${light ? 'light' : 'dark'}${wrong && wrong[i] ? ' wrong' : ''}`,
        text: PIECES[piece] || '',
      }),
    );
  }
  return el('figure', { class: 'board' }, el('figcaption', { text: caption }), grid);
}

function promptCell(folder, row) {
  if (!row.prompt) return el('td', { class: 'prompt missing', text: '(episode not available)' });
  const cell = el('td', { class: 'prompt' });
  for (const part of row.prompt) {
    if (part.type === 'text') cell.append(part.text);
    else {
      const src = `/api/folders/${folder}/image?e=${encodeURIComponent(row.episodeKey)}&a=${part.action}&layout=${row.layout}`;
      cell.append(
        el('img', {
          class: `action ${row.layout}`,
          src,
          alt: `action ${part.action + 1}`,
          title: `action ${part.action + 1}`,
        }),
      );
    }
  }
  return cell;
}

function scoreCell(row) {
  const r = row.reward;
  const cls = r === null ? '' : r >= 1 ? 'r1' : r <= 0 ? 'r0' : 'rp';
  const cell = el(
    'td',
    { class: 'score' },
    el('div', { class: `reward ${cls}`, text: r === null ? 'no reward' : `reward ${r.toFixed(3)}` }),
  );
  cell.append(
    el('div', {
      class: row.valid ? 'valid' : 'invalid',
      text: row.valid ? 'valid answer' : row.valid === false ? 'invalid: no answer parsed' : '',
    }),
  );
  if (row.advantage !== undefined)
    cell.append(el('div', { class: 'advantage', text: `advantage ${row.advantage.toFixed(3)}` }));
  if (!row.board) {
    cell.append(el('div', { class: 'answer' }, 'parsed: ', el('code', { text: row.prediction ?? '–' })));
    cell.append(el('div', { class: 'target' }, 'target: ', el('code', { text: row.target })));
  } else {
    const b = row.board;
    cell.append(
      el(
        'div',
        { class: 'boards' },
        board(b.predicted, b.wrong, b.predicted ? `predicted (${64 - b.right} wrong squares)` : 'no board parsed'),
        board(b.target, null, 'target'),
      ),
    );
  }
  if (row.error) cell.append(el('div', { class: 'invalid', text: `error: ${row.error}` }));
  return cell;
}

/** Table rows; completions of one episode in a row (a GRPO group) share one prompt cell. */
function sampleRows(folder, rows, groupKind) {
  const out = [];
  let shared = null;
  let previous = null;
  for (const row of rows) {
    const meta = el(
      'td',
      { class: 'meta' },
      el('div', { class: 'group', text: groupKind === 'step' ? `step ${row.group}` : row.group }),
      el('div', { text: row.modality }),
      el('div', { text: row.episodeId }),
    );
    const completion = el('td', {}, el('pre', { class: 'completion', text: row.completion ?? '(no response)' }));
    const same =
      previous &&
      shared &&
      row.prompt &&
      previous.group === row.group &&
      previous.episodeKey === row.episodeKey &&
      previous.modality === row.modality;
    const cells = [meta];
    if (same) shared.rowSpan += 1;
    else {
      shared = promptCell(folder, row);
      cells.push(shared);
    }
    cells.push(completion, scoreCell(row));
    out.push(el('tr', { class: 'sample' }, ...cells));
    previous = row;
  }
  return out;
}

function fillSelect(select, values, label) {
  const chosen = select.value;
  select.replaceChildren(
    el('option', { value: '', text: 'all' }),
    ...values.map((v) => el('option', { value: v, text: label(v) })),
  );
  select.value = values.includes(chosen) ? chosen : '';
}

/** Requests of the samples table so far: a response that is not the newest one's is dropped (filters changed fast). */
let samplesAsked = 0;

async function drawSamples(append = false) {
  const folder = $('f-folder').value;
  if (folder === '') return;
  const asked = ++samplesAsked;
  const offset = append ? state.shown : 0;
  const limit = append ? PAGE : Math.max(PAGE, state.shown);
  const params = new URLSearchParams({
    group: $('f-group').value,
    modality: $('f-modality').value,
    reward: $('f-reward').value,
    offset: String(offset),
    limit: String(limit),
  });
  let page;
  try {
    page = await getJson(`/api/folders/${folder}/samples?${params}`);
  } catch (error) {
    if (asked !== samplesAsked) return;
    $('samples-info').textContent = `samples: ${error.message}`;
    $('samples').tBodies[0].replaceChildren();
    $('more').hidden = true;
    return;
  }
  if (asked !== samplesAsked) return;
  $('f-group-label').textContent = page.groupKind;
  $('samples').tHead.rows[0].cells[0].textContent = page.groupKind;
  fillSelect($('f-group'), page.groups, (g) => (page.groupKind === 'step' ? `step ${g}` : g));
  fillSelect($('f-modality'), page.modalities, (m) => m);
  const body = $('samples').tBodies[0];
  const rows = sampleRows(folder, page.rows, page.groupKind);
  if (append) body.append(...rows);
  else body.replaceChildren(...rows);
  state.shown = offset + page.rows.length;
  $('samples-info').textContent =
    page.total === 0 ? 'no completions match (or none written yet)' : `${state.shown} of ${page.total} completions`;
  $('samples-messages').replaceChildren(...page.problems.map((p) => el('li', { text: p })));
  $('more').hidden = state.shown >= page.total;
}

// ---- live updates --------------------------------------------------------------------------------------------------

async function refresh(force = false) {
  let folders;
  try {
    folders = await getJson('/api/folders');
  } catch {
    setStatus('the metrl view server is not answering (stopped?)', true);
    return;
  }
  const stamps = folders.map((f) => f.stamp).join('|');
  state.folders = folders;
  if (force || stamps !== state.stamps) {
    state.stamps = stamps;
    drawFolders();
    try {
      await drawCharts();
    } catch (error) {
      $('chart-messages').replaceChildren(el('li', { text: `charts: ${error.message}` }));
    }
    await drawSamples();
    window.metrlView.updates++;
  }
  setStatus(`up to date ${new Date().toLocaleTimeString()}; checks every ${POLL_MS / 1000} s`);
}

function start() {
  for (const id of ['f-group', 'f-modality', 'f-reward']) $(id).addEventListener('change', () => drawSamples());
  $('f-folder').addEventListener('change', () => {
    $('f-group').value = '';
    $('f-modality').value = '';
    void drawSamples();
  });
  $('more').addEventListener('click', () => drawSamples(true));
  const loop = async () => {
    await refresh();
    setTimeout(loop, POLL_MS);
  };
  void refresh(true).then(() => setTimeout(loop, POLL_MS));
}

start();
