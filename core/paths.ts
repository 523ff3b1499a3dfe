// Well-known locations: the project root (for shipped checkpoints) and ../shared (read-only data beside the checkout).
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const SHARED_DIR = resolve(PROJECT_ROOT, '..', 'shared');
export const CHECKPOINTS_DIR = resolve(PROJECT_ROOT, 'checkpoints');
