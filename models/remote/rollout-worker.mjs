// Entry of the rollout worker thread (models/remote/background-pool.ts starts it): a worker thread does not inherit
// the tsx loader its parent registered, so it registers its own before loading the worker's code (rollout-worker.ts).
import { register } from 'tsx/esm/api';

register();
await import('./rollout-worker.ts');
