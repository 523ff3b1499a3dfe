// Domain name → environment. Each environment module registers itself here; commands look domains up by name so a
// new environment needs no change to any command.
import { UserError } from '../core/errors.ts';
import { DOMAINS, type Domain } from '../core/episode.ts';
import type { Env } from './env.ts';

interface Entry {
  load: () => Promise<Env>;
  /** Whether `metrl generate` and `metrl train` can draw its episodes (else they come from a published set only). */
  generated: boolean;
}

const entries: Partial<Record<Domain, Entry>> = {
  chess: { load: () => import('./chess/index.ts').then((m) => m.chessEnv), generated: true },
  shell: { load: () => import('./shell/index.ts').then((m) => m.shellEnv), generated: true },
  boxes: { load: () => import('./boxes/index.ts').then((m) => m.boxesEnv), generated: true },
  mcst: { load: () => import('./mcst/index.ts').then((m) => m.mcstEnv), generated: true },
  mate: { load: () => import('./mate/index.ts').then((m) => m.mateEnv), generated: true },
  rem: { load: () => import('./rem/index.ts').then((m) => m.remEnv), generated: true },
  minecraft: { load: () => import('./minecraft/index.ts').then((m) => m.minecraftEnv), generated: false },
};

export function availableDomains(): Domain[] {
  return DOMAINS.filter((d) => entries[d] !== undefined);
}

/** The domains whose episodes metrl generates (every other comes from a published set through --dataset). */
export function generatedDomains(): Domain[] {
  return availableDomains().filter((d) => entries[d]!.generated);
}

/** The domains that come only from a published set. */
export function datasetOnlyDomains(): Domain[] {
  return availableDomains().filter((d) => !entries[d]!.generated);
}

export async function getEnv(domain: string): Promise<Env> {
  const load = entries[domain as Domain]?.load;
  if (!load) throw new UserError(`unknown domain '${domain}' (choose from ${availableDomains().join(', ')})`);
  return load();
}
