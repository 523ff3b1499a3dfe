// Sampling many prompts at once. The Policy contract samples one prompt's group at a time; the built-in model also
// decodes several prompts' groups as one batch (fewer, larger tfjs steps, much faster on CPU). Use that when the
// policy offers it, else fall back to one call per prompt.
import type { Rng } from '../core/rng.ts';
import type { Completion, EncodedPrompt, Policy, SamplingOptions } from '../models/types.ts';

interface BatchedSampler {
  sampleGroups(prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng): Completion[][];
}

export function sampleMany(policy: Policy, prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng): Completion[][] {
  const batched = (policy as Partial<BatchedSampler>).sampleGroups;
  if (typeof batched === 'function') return batched.call(policy, prompts, group, options, rng);
  return prompts.map((p) => policy.sampleGroup(p, group, options, rng));
}

/** Split a list into chunks of at most `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Split a list into consecutive chunks of at most `maxItems` items whose sizes sum to at most `maxSize` (an item larger
 * than `maxSize` gets a chunk of its own).
 */
export function chunksWithin<T>(items: readonly T[], sizeOf: (item: T) => number, maxItems: number, maxSize: number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    const s = sizeOf(item);
    if (current.length > 0 && (current.length >= maxItems || size + s > maxSize)) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += s;
  }
  if (current.length > 0) out.push(current);
  return out;
}
