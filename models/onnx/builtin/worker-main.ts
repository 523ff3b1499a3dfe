// The code of an ONNX Runtime worker thread (started by worker-pool.ts through
// worker.mjs): it holds sessions, built-in models and rollout parts by id, answers each request in order on its
// port, and counts every reply in the shared signal so that the main thread, blocked in Atomics.wait, knows it is
// queued. Graph bytes, feeds and adapter values come from the main thread; nothing here reads files or weights.
import { workerData, type MessagePort } from 'node:worker_threads';
import { UserError } from '../../../core/errors.ts';
import { OrtSession, type SessionOptions } from '../session.ts';
import { BuiltinOrtModel, type BuiltinOrtOptions, type LoraValues, type PrebuiltModel } from './builtin-session.ts';
import { RolloutPart, type PartPlan, type PartPrompts } from './rollout-part.ts';
import { fromWire, toWire, type WireTensor } from './worker-wire.ts';

const { port, signal } = workerData as { port: MessagePort; signal: Int32Array };
const objects = new Map<number, OrtSession | BuiltinOrtModel | RolloutPart>();

function get<T>(id: number, kind: new (...args: never[]) => T): T {
  const o = objects.get(id);
  if (!(o instanceof kind)) throw new Error(`no ${kind.name} ${id} in this worker`);
  return o;
}

type Request =
  | { op: 'session'; id: number; model: Uint8Array; options: SessionOptions }
  | { op: 'run'; id: number; feeds: Record<string, WireTensor>; outputs?: string[] }
  | { op: 'model'; id: number; model: PrebuiltModel; options: BuiltinOrtOptions }
  | { op: 'lora'; id: number; values: LoraValues }
  | { op: 'part'; id: number; model: number }
  | { op: 'partRollout'; id: number; prompts: PartPrompts; plan: PartPlan }
  | { op: 'score'; id: number; args: Parameters<BuiltinOrtModel['scoreGroup']> }
  | { op: 'dispose'; id: number };

function handle(req: Request): unknown {
  switch (req.op) {
    case 'session':
      objects.set(req.id, new OrtSession(req.model, req.options));
      return null;
    case 'run':
      return toWire(get(req.id, OrtSession).run(fromWire(req.feeds), req.outputs));
    case 'model':
      objects.set(req.id, new BuiltinOrtModel(req.model, req.options));
      return null;
    case 'lora':
      get(req.id, BuiltinOrtModel).setLora(req.values);
      return null;
    case 'part':
      objects.set(req.id, new RolloutPart(get(req.model, BuiltinOrtModel)));
      return null;
    case 'partRollout':
      return get(req.id, RolloutPart).rollout(req.prompts, req.plan);
    case 'score':
      return get(req.id, BuiltinOrtModel).scoreGroup(...req.args);
    case 'dispose': {
      const o = objects.get(req.id);
      objects.delete(req.id);
      if (o instanceof RolloutPart) o.finish();
      else o?.dispose();
      return null;
    }
  }
}

port.on('message', (req: Request) => {
  let reply: unknown;
  try {
    reply = { ok: true, value: handle(req) };
  } catch (error) {
    reply = { ok: false, error: (error as Error).message, user: error instanceof UserError };
  }
  port.postMessage(reply);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
});
