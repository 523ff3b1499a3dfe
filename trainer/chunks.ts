// Splitting work into chunks: evaluation prompts into decoding batches, and a step's sequences into
// learner chunks bounded by count and tokens (a memory bound only; the loss sums over them).

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
export function chunksWithin<T>(
  items: readonly T[],
  sizeOf: (item: T) => number,
  maxItems: number,
  maxSize: number,
): T[][] {
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

/**
 * Split a list into consecutive chunks of at most `maxItems` items whose cost, `costOf(chunk)` of the whole chunk,
 * is at most `maxCost` (an item that alone costs more gets a chunk of its own). For costs that are not a sum over the
 * items (a learner pass that runs a shared prompt once). With costOf = the sum of sizes it is chunksWithin.
 */
export function chunksByCost<T>(
  items: readonly T[],
  costOf: (chunk: readonly T[]) => number,
  maxItems: number,
  maxCost: number,
): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  for (const item of items) {
    if (current.length > 0 && (current.length >= maxItems || costOf([...current, item]) > maxCost)) {
      out.push(current);
      current = [];
    }
    current.push(item);
  }
  if (current.length > 0) out.push(current);
  return out;
}
