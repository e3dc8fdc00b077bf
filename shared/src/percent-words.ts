/**
 * A rate from 0 to 1 as a percentage a person reads, to four significant digits, so that a small
 * rate is not shown as 0 and two close rates are told apart: `33.33 %`, `0.0001 %`, `100 %`.
 */
export function percentWords(rate: number): string {
  const percent = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 4, useGrouping: false });
  return `${percent.format(rate * 100)} %`;
}
