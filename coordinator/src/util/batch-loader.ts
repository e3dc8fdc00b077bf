/** Reads the values of many keys at once; a key without a value is absent from the map. */
export type LoadMany<K, V> = (keys: readonly K[]) => Promise<ReadonlyMap<K, V>>;

interface Waiter<V> {
  resolve(value: V | undefined): void;
  reject(error: unknown): void;
}

/**
 * Coalesces reads of one key made in the same turn of the event loop into one read of many
 * (`loadMany`), at most `maxBatch` keys at a time: when thousands of jobs go out at once (an
 * OTA publish), their streams read them in a few statements instead of one each. A read sees
 * what was committed when its batch ran, as a read of its own would (nothing is cached: every
 * `load` joins the next batch). A failed batch rejects each of its reads.
 *
 * The batch runs once the promise jobs queued in this turn have all run (a promise job that
 * queues a `process.nextTick` sees it run after the last of them), before any I/O: reads asked
 * for at any depth of the promise chains one event starts share it, and nothing waits for the
 * next turn.
 */
export function batchLoader<K, V>(loadMany: LoadMany<K, V>, maxBatch = 500): (key: K) => Promise<V | undefined> {
  let pending = new Map<K, Waiter<V>[]>();

  const flush = () => {
    const batch = pending;
    pending = new Map();
    const keys = [...batch.keys()];
    for (let i = 0; i < keys.length; i += maxBatch) {
      const slice = keys.slice(i, i + maxBatch);
      Promise.resolve()
        .then(() => loadMany(slice))
        .then(
          (values) => {
            for (const key of slice) for (const w of batch.get(key)!) w.resolve(values.get(key));
          },
          (error: unknown) => {
            for (const key of slice) for (const w of batch.get(key)!) w.reject(error);
          },
        );
    }
  };

  return (key) =>
    new Promise<V | undefined>((resolve, reject) => {
      if (pending.size === 0) void Promise.resolve().then(() => process.nextTick(flush));
      const waiting = pending.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else pending.set(key, [{ resolve, reject }]);
    });
}
