/**
 * A decimal number as a number input takes it (`12`, `-3`, `0.5`, `1e3`), or NaN: not `0x10`,
 * `0b1` or `Infinity`, which `Number` would read as 16, 1 and Infinity.
 */
export const decimal = (text: string): number =>
  /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text) ? Number(text) : NaN;
