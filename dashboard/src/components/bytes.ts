const UNITS = ['bytes', 'KB', 'MB', 'GB', 'TB'];

/** "512 bytes", "4.2 MB": a size in decimal units (1 KB = 1,000 bytes), three digits at most. */
export function humanSize(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  if (unit === 0) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`;
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${UNITS[unit]}`;
}
