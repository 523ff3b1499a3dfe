// The inference engine: what runs a policy's Sampler side (rollouts, reference and old-policy
// log-probs, evaluation, `metrl serve`) while the policy itself stays the Learner. 'tfjs' is the policy;
// 'ort' is ONNX Runtime, on the CPU or a GPU execution provider (--device), on --threads N cores (the built-in model on
// the CPU: N one-thread sessions, models/onnx/builtin/worker-pool.ts; otherwise one session of N intra-op threads): the
// built-in model (models/onnx/builtin/builtin-sampler.ts; its LoRA gradients too, models/onnx/builtin/builtin-learner.ts) and the Hugging Face
// architectures whose descriptor lists the engine (models/registry.ts HF_ARCHITECTURES: their decoders in
// models/onnx/hf/hf-sampler.ts, their vision towers too; their LoRA gradients in models/onnx/hf/hf-learner.ts); ORT is
// the default for all of them, tfjs the engine named with --engine tfjs. After the learner's adapters change (an optimiser update,
// a resumed or loaded adapter) the caller calls syncLora(), which an ORT session needs and tfjs does not.
import { UserError } from '../core/errors.ts';
import type { Learner } from './learner.ts';
import type { Policy } from './policy.ts';
import type { Sampler } from './sampler.ts';
import { BUILTIN_MODEL_TYPE, HF_ARCHITECTURES } from './registry.ts';
import type { Device } from './onnx/device.ts';
import type { RolloutRounds } from './remote/rollout-rounds.ts';

export const ENGINES = ['tfjs', 'ort'] as const;
export type Engine = (typeof ENGINES)[number];

/**
 * The engine a model gets when none is named: ONNX Runtime, wherever it has a graph for the model (the built-in model
 * and ORT_HF_MODEL_TYPES): it is the faster of the two on every measured step (docs/performance.md), and a Hugging
 * Face checkpoint above 4 GB of float32 weights loads on ORT only (tfjs's WASM heap stops at 4 GB).
 */
export const DEFAULT_ENGINE: Engine = 'ort';

/** Hugging Face model types whose descriptor lists ONNX Runtime (models/onnx/ has their graphs). */
const ORT_HF_MODEL_TYPES: readonly string[] = HF_ARCHITECTURES.modelTypes('ort');

/** What --help says the default is. */
export const DEFAULT_ENGINE_HELP = `default ort where ONNX Runtime has a graph for the model (the built-in model, ${ORT_HF_MODEL_TYPES.join(', ')}), else tfjs`;

/** ONNX Runtime's settings: intra-op threads (default: every core) and the execution provider (default: CPU). */
export interface OrtRuntime {
  threads?: number;
  device?: Device;
}

/** A Sampler for a policy on an engine; syncLora() re-reads the policy's adapters, dispose() frees the engine only. */
export interface EngineSampler {
  engine: Engine;
  sampler: Sampler;
  /** `version`: the optimiser updates the adapters hold (rollout servers record it; in-process engines ignore it). */
  syncLora(version?: number): void;
  /**
   * True when the policy's adapters are exactly zero (B = 0: fresh adapters), so that the policy is the reference
   * policy. A trainer then takes the reference log-probs from the learner's own pass rather than from this engine:
   * two engines round differently (about 1e-6 in a log-prob), and a KL gradient made of that rounding alone is what
   * Adam, which divides by the gradient's own size, turns into a full-size step. Always false for tfjs, whose
   * reference pass is the learner's code and agrees with it exactly.
   */
  referenceIsPolicy(): boolean;
  dispose(): void;
  /** "ONNX Runtime 1.30.0, cpu, 2 threads" or "tfjs": for the line a command prints. */
  describe: string;
  /** Whether ONNX Runtime also computes the LoRA gradients (an ORT learner, built-in or Hugging Face); else tfjs learns. */
  ortLearner: boolean;
  /** Rollouts run on servers (models/remote/remote-engine.ts): their log-probs are another engine's. */
  remote?: RolloutRounds;
}

const ortUnsupported = (modelType: string) =>
  `--engine ort: the ONNX Runtime engine has no graph for model type ${modelType} (it runs the built-in model and ${ORT_HF_MODEL_TYPES.join(', ')}); use --engine tfjs`;

/**
 * The engine a command runs a checkpoint of `modelType` on: the one named, else the default for that model. Naming
 * 'ort' for a model type without an ONNX graph is a UserError; so are --threads and --device without 'ort' (they set
 * nothing).
 */
export function chooseEngine(requested: Engine | undefined, modelType: string, runtime: OrtRuntime = {}): Engine {
  const builtin = modelType === BUILTIN_MODEL_TYPE;
  if (requested === 'ort' && !builtin && !ORT_HF_MODEL_TYPES.includes(modelType))
    throw new UserError(ortUnsupported(modelType));
  const engine = requested ?? (builtin || ORT_HF_MODEL_TYPES.includes(modelType) ? DEFAULT_ENGINE : 'tfjs');
  if (engine !== 'ort' && (runtime.threads !== undefined || runtime.device !== undefined)) {
    const flag = runtime.threads !== undefined ? '--threads' : '--device';
    throw new UserError(
      `${flag} sets ONNX Runtime and applies with --engine ort (the tfjs engine's choice is --backend)`,
    );
  }
  return engine;
}

/**
 * Open `engine` (unset: the policy's default) on a loaded policy whose adapters (if any) are attached. The ORT device is
 * checked first (a missing provider is one UserError line naming what is missing).
 */
export async function openEngine(
  policy: Policy,
  requested: Engine | undefined,
  runtime: OrtRuntime = {},
): Promise<EngineSampler> {
  const { BuiltinPolicy } = await import('./builtin/policy.ts');
  const { HfPolicy } = await import('./hf/policy.ts');
  // ONNX Runtime has graphs for the built-in model and for the Hugging Face architectures whose descriptor lists it.
  const hasOrt =
    policy instanceof BuiltinPolicy ||
    (policy instanceof HfPolicy && ORT_HF_MODEL_TYPES.includes(policy.config.modelType));
  const engine = requested ?? (hasOrt ? DEFAULT_ENGINE : 'tfjs');
  if (engine === 'tfjs')
    return {
      engine,
      sampler: policy,
      syncLora: () => {},
      referenceIsPolicy: () => false,
      dispose: () => {},
      describe: 'tfjs',
      ortLearner: false,
    };
  if (!hasOrt)
    throw new UserError(ortUnsupported(policy instanceof HfPolicy ? policy.config.modelType : policy.constructor.name));
  const device = runtime.device ?? 'cpu';
  const { checkDevice } = await import('./onnx/device.ts');
  checkDevice(device);
  const version = (await import('./onnx/ort-binding.ts')).bindingOrtVersion();
  const threads =
    runtime.threads !== undefined
      ? `${runtime.threads} thread${runtime.threads === 1 ? '' : 's'}`
      : 'threads: all cores';
  const describe = `ONNX Runtime ${version} (${device}, ${threads})`;
  const zero = (b: { dataSync(): unknown }) => (b.dataSync() as Float32Array).every((x) => x === 0);
  if (policy instanceof HfPolicy) {
    const { HfOrtSampler } = await import('./onnx/hf/hf-sampler.ts');
    const sampler = new HfOrtSampler(policy, { threads: runtime.threads, device });
    // The sampler's graphs put every projection into weight files ORT maps (the ORT learner's graph reads the
    // decoder's too): the host's copies are no longer needed.
    if (policy.decoder.hostWeights) sampler.releaseHostWeights();
    const referenceIsPolicy = () => [...policy.decoder.linears().values()].every((l) => !l.lora || zero(l.lora.b));
    return {
      engine,
      sampler,
      syncLora: () => sampler.syncLora(),
      referenceIsPolicy,
      dispose: () => sampler.dispose(),
      describe,
      ortLearner: true,
    };
  }
  const { BuiltinOrtSampler } = await import('./onnx/builtin/builtin-sampler.ts');
  const sampler = new BuiltinOrtSampler(policy, { threads: runtime.threads, device });
  const { loraAdapters } = await import('./builtin/lora.ts');
  const referenceIsPolicy = () => policy.lora === null || loraAdapters(policy.lora).every((a) => zero(a.b));
  return {
    engine,
    sampler,
    syncLora: () => sampler.syncLora(),
    referenceIsPolicy,
    dispose: () => sampler.dispose(),
    describe,
    ortLearner: true,
  };
}

/**
 * The ONNX Runtime learner of a policy (what an engine with `ortLearner` pairs with): the built-in model's
 * (models/onnx/builtin/builtin-learner.ts) or a Hugging Face checkpoint's (models/onnx/hf/hf-learner.ts).
 */
export async function openOrtLearner(
  policy: Policy,
  options: { threads?: number; device?: Device } = {},
): Promise<Learner> {
  const { BuiltinPolicy } = await import('./builtin/policy.ts');
  const { HfPolicy } = await import('./hf/policy.ts');
  if (policy instanceof HfPolicy)
    return new (await import('./onnx/hf/hf-learner.ts')).HfOrtLearner(policy, {
      threads: options.threads,
      device: options.device,
    });
  if (!(policy instanceof BuiltinPolicy))
    throw new UserError(
      `engine ort: the ONNX Runtime learner has no graph for ${policy.constructor.name}; use engine tfjs`,
    );
  return new (await import('./onnx/builtin/builtin-learner.ts')).BuiltinOrtLearner(policy, options);
}
