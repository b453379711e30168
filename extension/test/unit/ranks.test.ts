import { describe, expect, it } from "vitest";
import { parseRanks } from "../../src/ranks";

describe("parseRanks", () => {
  it("takes a whole number of ranks from 2 to 64, spaces around it allowed", () => {
    expect(["2", " 8 ", "64"].map(parseRanks)).toEqual([2, 8, 64]);
  });

  it("refuses one rank, fractions, words and nonsense", () => {
    expect(["1", "0", "-2", "2.5", "two", "", "65"].map(parseRanks)).toEqual(Array(7).fill(undefined));
  });
});
