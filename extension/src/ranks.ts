/** How many ranks a "Run Current File with torchrun" starts (no `vscode` here, so it is unit-tested directly). */

/** The answer to "how many ranks?": a whole number from 2 to 64, else undefined. */
export function parseRanks(text: string): number | undefined {
  const ranks = Number(text.trim());
  return Number.isInteger(ranks) && ranks >= 2 && ranks <= 64 ? ranks : undefined;
}
