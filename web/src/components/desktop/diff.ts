/** A line of a diff: kept, removed from the old text, or added in the new one. */
export interface DiffLine {
  kind: 'same' | 'removed' | 'added';
  text: string;
}

/** JSON with keys sorted at every depth, so two definitions diff by content, not order. */
export function stableJson(value: unknown): string {
  const sorted = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(sorted);
    if (item && typeof item === 'object') {
      return Object.fromEntries(
        Object.keys(item as Record<string, unknown>)
          .sort()
          .map((key) => [key, sorted((item as Record<string, unknown>)[key])]),
      );
    }
    return item;
  };
  return JSON.stringify(sorted(value), null, 2);
}

/**
 * A line diff by the longest common subsequence: definitions are a few hundred lines at
 * most, so the quadratic table is cheap.
 */
export function diffLines(before: string, after: string): DiffLine[] {
  const a = before.split('\n');
  const b = after.split('\n');
  const table: number[][] = Array.from({ length: a.length + 1 }, () =>
    new Array<number>(b.length + 1).fill(0),
  );
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      const row = table[i] as number[];
      row[j] =
        a[i] === b[j]
          ? (table[i + 1]?.[j + 1] ?? 0) + 1
          : Math.max(table[i + 1]?.[j] ?? 0, row[j + 1] ?? 0);
    }
  }
  const lines: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      lines.push({ kind: 'same', text: a[i] as string });
      i++;
      j++;
    } else if ((table[i + 1]?.[j] ?? 0) >= (table[i]?.[j + 1] ?? 0)) {
      lines.push({ kind: 'removed', text: a[i++] as string });
    } else {
      lines.push({ kind: 'added', text: b[j++] as string });
    }
  }
  while (i < a.length) lines.push({ kind: 'removed', text: a[i++] as string });
  while (j < b.length) lines.push({ kind: 'added', text: b[j++] as string });
  return lines;
}
