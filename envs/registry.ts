// Domain name → environment. Each environment module registers itself here; commands look domains up by name so a
// new environment needs no change to any command.
import { UserError } from '../core/errors.ts';
import { DOMAINS, type Domain } from '../core/episode.ts';
import type { Env } from './env.ts';

const loaders: Partial<Record<Domain, () => Promise<Env>>> = {
  chess: () => import('./chess/index.ts').then((m) => m.chessEnv),
  shell: () => import('./shell/index.ts').then((m) => m.shellEnv),
  boxes: () => import('./boxes/index.ts').then((m) => m.boxesEnv),
  mcst: () => import('./mcst/index.ts').then((m) => m.mcstEnv),
  mate: () => import('./mate/index.ts').then((m) => m.mateEnv),
  rem: () => import('./rem/index.ts').then((m) => m.remEnv),
  minecraft: () => import('./minecraft/index.ts').then((m) => m.minecraftEnv),
};

export function availableDomains(): Domain[] {
  return DOMAINS.filter((d) => loaders[d] !== undefined);
}

export async function getEnv(domain: string): Promise<Env> {
  const load = loaders[domain as Domain];
  if (!load) throw new UserError(`unknown domain '${domain}' (choose from ${availableDomains().join(', ')})`);
  return load();
}
