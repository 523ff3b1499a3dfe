// Entry of an ONNX Runtime worker thread (models/onnx/builtin/worker-pool.ts starts it): the project is TypeScript run through
// tsx's loader, and a worker thread does not inherit the loader its parent registered, so it registers its own before
// loading the worker's code (worker-main.ts).
import { register } from 'tsx/esm/api';

register();
await import('./worker-main.ts');
