// Environment-specific command-line flags (boxes --split-kind, mcst --level …), declared once here so that every
// command that makes episodes (generate, evaluate, train) accepts the same flags and passes them to the environment's
// candidates() as `extra`. Commands take them as strings; each environment validates its own values with zod and
// names the bad flag in a UserError. One line per flag; each environment adds its own.
import type { Options } from 'yargs';
import { z } from 'zod';
import { UserError } from '../core/errors.ts';
import type { Domain } from '../core/episode.ts';

export interface EnvFlag {
  domain: Domain;
  flag: string;
  describe: string;
}

export const ENV_FLAGS = [
  {
    domain: 'chess',
    flag: 'chess-answer',
    describe:
      'chess: reference (default: the MET-Bench harness\'s parsing, six-field FENs on a "final answer" line) | lenient (also shorter FENs and a response that is only a FEN; recorded in the summary)',
  },
  {
    domain: 'boxes',
    flag: 'split-kind',
    describe: 'boxes: base | numops | vocab | altforms | altforms-numops | ambiref | movecontents (default base)',
  },
  {
    domain: 'boxes',
    flag: 'prefixes',
    describe: 'boxes: exact (show exactly --actions operations, default) | upto (0..--actions, uniformly)',
  },
  { domain: 'mcst', flag: 'level', describe: 'mcst: difficulty level 1-5 (default: all levels mixed)' },
  {
    domain: 'mcst',
    flag: 'negation',
    describe: 'mcst: on (default) | off (matched pairs without negated sentences) | paired (both)',
  },
  {
    domain: 'mcst',
    flag: 'mcst-domain',
    describe: 'mcst: office | home | healthcare | … (a comma list; default all twelve)',
  },
  {
    domain: 'mcst',
    flag: 'question-type',
    describe: 'mcst: possession | verification | location | count-entity | … (a comma list; default all nine)',
  },
  {
    domain: 'mcst',
    flag: 'negation-rate',
    describe: 'mcst ablation: share of negated actions 0-0.5, overriding the level (Table 18)',
  },
  {
    domain: 'mcst',
    flag: 'mcst-actions',
    describe: 'mcst ablation: actions per scenario, N or A-B within 1-40, overriding the level (Table 22)',
  },
  {
    domain: 'mcst',
    flag: 'mcst-grid',
    describe: 'mcst ablation: grid side length or none, overriding the level (Table 20)',
  },
  {
    domain: 'mate',
    flag: 'mate-task',
    describe: 'mate: img2txt | txt2img | img2img | txt2txt | cross | unimodal | all (a comma list; default cross)',
  },
  { domain: 'mate', flag: 'mate-objects', describe: 'mate: objects per scene, N or A-B within 3-10 (default 3-10)' },
  {
    domain: 'mate',
    flag: 'mate-shots',
    describe: 'mate: solved questions about the same scene in the prompt, 0-2 (default 2)',
  },
  {
    domain: 'rem',
    flag: 'rem-variant',
    describe: 'rem: baseline | full-rotation | single-frame (default baseline; --actions = frames for baseline)',
  },
  {
    domain: 'rem',
    flag: 'rem-objects',
    describe: 'rem: objects in the world, N or A-B (default one of 8, 16, 24, 36, 48)',
  },
  {
    domain: 'rem',
    flag: 'rem-duplicates',
    describe: 'rem: objects repeating a colour-shape, N or A-B (full-rotation: 1-2 targets)',
  },
  {
    domain: 'rem',
    flag: 'rem-question',
    describe: 'rem: counting | comparison | left-right | temporal | all (a comma list; default all)',
  },
] as const satisfies readonly EnvFlag[];

export type EnvFlagName = (typeof ENV_FLAGS)[number]['flag'];

/** yargs option specs for every environment flag. */
export function envFlagOptions(): Record<string, Options> {
  return Object.fromEntries(ENV_FLAGS.map((f) => [f.flag, { type: 'string', describe: f.describe }]));
}

/** zod shape for the flags, to extend a command's schema with (values are checked later by the environment). */
export const envFlagShape = Object.fromEntries(
  ENV_FLAGS.map((f) => [f.flag, z.union([z.string(), z.number()]).optional()]),
) as {
  [K in EnvFlagName]: z.ZodOptional<z.ZodUnion<[z.ZodString, z.ZodNumber]>>;
};

/**
 * The `extra` options for `domain` from parsed flags (kebab-case keys). A flag given for a domain that is not being
 * used is an error, so that `--level 3 --domain boxes` does not silently do nothing.
 */
export function envExtraFromFlags(
  domains: readonly string[],
  flags: Record<string, unknown>,
): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const f of ENV_FLAGS as readonly EnvFlag[]) {
    const value = flags[f.flag];
    if (value === undefined) continue;
    if (!domains.includes(f.domain)) throw new UserError(`--${f.flag} applies to --domain ${f.domain}`);
    out[f.domain] = { ...out[f.domain], [f.flag]: value };
  }
  return out;
}
