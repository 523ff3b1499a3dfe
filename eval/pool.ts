// A fixed number of workers pulling items from a list: at most `workers` requests in flight. When the signal aborts
// (a fatal error, Ctrl-C) no new item starts; items already running finish or are aborted by their own signal.

export async function runPool<T>(
  items: readonly T[],
  workers: number,
  work: (item: T) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (!signal.aborted && next < items.length) {
      const item = items[next++];
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(workers, items.length)) }, worker));
}
