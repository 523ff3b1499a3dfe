// From command-line lists to the settings a run evaluates. Comma lists expand to every combination: `--actions
// 0,5,10,20,50,100` is the sequence-length sweep of Figures 3-4, `--image-ratio 0,0.25,0.5,0.75,1` the mixed-modality
// sweep of Figure 6, `--modality text,image --prompt zero-shot,few-shot,cot` a whole Table 1 or 2 in one run. The
// rules that tie options together (perception reads images, the cascade needs image actions, …) live here.
import { UserError } from '../core/errors.ts';
import { MODALITY_SETTINGS, type Domain, type ModalitySetting } from '../core/episode.ts';
import type { Env } from '../envs/env.ts';
import { COMPACT_STYLE } from './query-to-chat.ts';
import type { Setting, Task } from './types.ts';

export interface SettingOptions {
  domains: Domain[];
  modalities: ModalitySetting[] | null; // null: not given on the command line
  imageRatios: number[] | null;
  actions: number[];
  prompts: string[];
  shots: number | null;
  task: Task;
  cascade: boolean;
}

/** Default number of few-shot examples, as in the paper (N = 5). */
const DEFAULT_SHOTS = 5;

/** Parse "0,5,10" (or a single value) into numbers, naming the flag on error. */
export function parseNumberList(
  flag: string,
  value: string | number,
  check: (v: number) => boolean,
  expected: string,
): number[] {
  const parts = String(value)
    .split(',')
    .map((s) => s.trim());
  const numbers = parts.map(Number);
  numbers.forEach((v, i) => {
    if (parts[i] === '' || !Number.isFinite(v) || !check(v))
      throw new UserError(`--${flag}: '${parts[i]}' is not ${expected}`);
  });
  return [...new Set(numbers)];
}

export function parseStringList<T extends string>(flag: string, value: string, allowed?: readonly T[]): T[] {
  const parts = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (parts.length === 0) throw new UserError(`--${flag}: empty`);
  for (const p of parts) {
    if (allowed && !allowed.includes(p as T))
      throw new UserError(`--${flag}: unknown value '${p}' (choose from ${allowed.join(', ')})`);
  }
  return [...new Set(parts)] as T[];
}

export function parseModalities(value: string): ModalitySetting[] {
  return parseStringList('modality', value, MODALITY_SETTINGS);
}

/** Stable key of a setting, used in item ids, file rows and summaries: "chess/image/T10/cot". */
export function settingKey(s: Setting): string {
  const parts: string[] = [s.domain, s.modality];
  if (s.modality === 'mixed') parts.push(`p${s.imageRatio}`);
  parts.push(`T${s.actions}`);
  if (s.task === 'perception') parts.push('perception');
  else parts.push(s.shots > 0 ? `${s.prompt}-${s.shots}` : s.prompt);
  if (s.cascade) parts.push('cascade');
  return parts.join('/');
}

/** A short label for tables and plots: "image, cot", "mixed p=0.5, T=20, cot, cascade". */
export function settingLabel(s: Setting, varying: Set<keyof Setting>): string {
  const bits: string[] = [];
  if (varying.has('domain')) bits.push(s.domain);
  bits.push(s.modality === 'mixed' ? `mixed p=${s.imageRatio}` : s.modality);
  if (varying.has('actions')) bits.push(`T=${s.actions}`);
  if (s.task === 'perception') bits.push('perception');
  else if (varying.has('prompt')) bits.push(s.shots > 0 ? `${s.prompt} (n=${s.shots})` : s.prompt);
  if (s.cascade) bits.push('cascade');
  return bits.join(', ');
}

/** Which fields differ between settings (what a table's columns or a plot's x axis must show). */
export function varyingFields(settings: Setting[]): Set<keyof Setting> {
  const out = new Set<keyof Setting>();
  if (settings.length === 0) return out;
  for (const key of Object.keys(settings[0]) as (keyof Setting)[]) {
    if (settings.some((s) => s[key] !== settings[0][key])) out.add(key);
  }
  return out;
}

/** Expand options into settings, checking them against the environments. */
export function expandSettings(options: SettingOptions, envs: Map<Domain, Env>, fixedPrompt?: string): Setting[] {
  const { task, cascade } = options;
  if (task === 'perception' && cascade) throw new UserError('--cascade applies to tracking, not to --task perception');
  let modalities = options.modalities;
  if (task === 'perception') {
    if (modalities && modalities.some((m) => m !== 'image'))
      throw new UserError('--task perception reads image actions: use --modality image (or leave it out)');
    modalities = ['image'];
  }
  if (options.imageRatios !== null) {
    if (modalities && modalities.some((m) => m !== 'mixed'))
      throw new UserError('--image-ratio applies to --modality mixed');
    modalities = ['mixed'];
  }
  modalities ??= ['text'];
  if (cascade && modalities.includes('text'))
    throw new UserError('--cascade transcribes image actions: use --modality image or mixed');
  const ratios = options.imageRatios ?? [0.5];
  if (task === 'perception' && options.actions.includes(0))
    throw new UserError('--task perception needs episodes with at least one action (--actions ≥ 1)');

  const prompts = fixedPrompt ? [fixedPrompt] : options.prompts;
  if (fixedPrompt && options.prompts.some((p) => p !== fixedPrompt)) {
    throw new UserError(
      `this model reads only its own prompt layout: --prompt ${fixedPrompt} (got ${options.prompts.join(',')})`,
    );
  }
  if (options.shots !== null && !prompts.includes('few-shot'))
    throw new UserError('--shots applies to --prompt few-shot');

  const settings: Setting[] = [];
  for (const domain of options.domains) {
    const env = envs.get(domain)!;
    if (task === 'perception' && !env.perceptionProbe) throw new UserError(`${domain} has no perception probe`);
    for (const prompt of task === 'perception' ? [prompts[0]] : prompts) {
      if (prompt !== COMPACT_STYLE && !env.promptStyles.includes(prompt)) {
        throw new UserError(
          `--prompt: ${domain} has no style '${prompt}' (choose from ${[...env.promptStyles, COMPACT_STYLE].join(', ')})`,
        );
      }
      for (const modality of modalities) {
        for (const imageRatio of modality === 'mixed' ? ratios : [modality === 'image' ? 1 : 0]) {
          for (const actions of options.actions) {
            const shots = prompt === 'few-shot' ? (options.shots ?? DEFAULT_SHOTS) : 0;
            settings.push({ domain, modality, imageRatio, actions, prompt, shots, task, cascade });
          }
        }
      }
    }
  }
  return settings;
}
