/**
 * A binary min-heap of items by a number (the instant each is due): the scheduler's index of
 * what fires next, so that finding the earliest of many schedules costs O(log n), not a scan.
 */
export class DueHeap<T> {
  private readonly items: { at: number; item: T }[] = [];

  get size(): number {
    return this.items.length;
  }

  push(at: number, item: T): void {
    const items = this.items;
    items.push({ at, item });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.at <= at) break;
      [items[parent], items[i]] = [items[i]!, items[parent]!];
      i = parent;
    }
  }

  /** The earliest entry without removing it, or undefined when empty. */
  peek(): { at: number; item: T } | undefined {
    return this.items[0];
  }

  /** Removes and returns the earliest entry, or undefined when empty. */
  pop(): { at: number; item: T } | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < items.length && items[left]!.at < items[smallest]!.at) smallest = left;
      if (right < items.length && items[right]!.at < items[smallest]!.at) smallest = right;
      if (smallest === i) break;
      [items[smallest], items[i]] = [items[i]!, items[smallest]!];
      i = smallest;
    }
    return top;
  }
}
