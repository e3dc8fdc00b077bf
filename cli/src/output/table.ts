/**
 * Rows as aligned columns under their header, two spaces apart, the last column unpadded; a
 * missing value is `-`.
 */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly (string | null | undefined)[])[],
): string {
  const cells = [header, ...rows].map((row) => header.map((_, i) => clean(row[i])));
  const widths = header.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return cells
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '))
    .join('\n')
    .concat('\n');
}

/** `label:  value` lines with the values aligned. */
export function formatFields(fields: readonly (readonly [string, string | null | undefined])[]): string {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1;
  return fields.map(([label, value]) => `${`${label}:`.padEnd(width)}  ${clean(value)}\n`).join('');
}

function clean(value: string | null | undefined): string {
  if (value === null || value === undefined || value === '') return '-';
  return value.replace(/[\r\n\t]+/g, ' ');
}
