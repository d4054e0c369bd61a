/** A credit amount as the console shows it: up to four decimals, in the reader's locale. */
export function credits(n: number): string {
  return n.toLocaleString(undefined, { maximumFractionDigits: 4 });
}
