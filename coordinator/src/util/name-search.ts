/** Text of printable ASCII, which folds as it lowers. */
const ASCII = /^[ -~]*$/;

/**
 * Text folded for a search that ignores case: Unicode's full case mapping (`toUpperCase` maps `ß`
 * to `SS`, so `Straße` and `STRASSE` fold alike) after its compatibility forms (`ﬁ`, full-width
 * letters) read as their plain letters (NFKC).
 */
export function foldCase(text: string): string {
  return ASCII.test(text) ? text.toLowerCase() : text.normalize('NFKC').toUpperCase().toLowerCase();
}

/**
 * Whether any of a thing's names holds what was typed, case ignored (foldCase): the lists' `q`
 * (agents by name or hostname, triggers and devices by name). Null for nothing typed: all match.
 */
export function nameSearch(typed: string | undefined): ((...names: string[]) => boolean) | null {
  if (!typed) return null;
  const folded = foldCase(typed);
  return (...names) => names.some((name) => foldCase(name).includes(folded));
}
