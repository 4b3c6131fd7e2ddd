import { describe, expect, it } from "vitest";

import { emptyPages, missing, PAGE, rowAt, withPage } from "./pager";
import { summary } from "./test/fixtures";

const page = (from: number, n: number) => Array.from({ length: n }, (_, k) => summary(`j${from + k}`));

describe("the Jobs list's pages", () => {
  it("fetches only the first page for the rows at the top", () => {
    expect(missing(emptyPages(100_000), 0, 40)).toEqual([{ end: "top", i: 0 }]);
  });

  it("fetches the oldest page, from the other end, for the rows at the bottom", () => {
    expect(missing(emptyPages(100_000), 99_960, 99_999)).toEqual([{ end: "bottom", i: 0 }]);
  });

  it("places a bottom page's rows from the end, oldest last", () => {
    const p = withPage(emptyPages(250), { end: "bottom", i: 0 }, page(0, PAGE), "c", 249);
    expect(rowAt(p, 249)?.id).toBe("j0");
    expect(rowAt(p, 150)?.id).toBe("j99");
    expect(rowAt(p, 149)).toBeUndefined();
    expect(p.ends).toEqual([null, "c"]);
    expect(p.fetched).toBe(PAGE);
  });

  it("asks for nothing that is in memory, and only the next page when scrolled past it", () => {
    let p = withPage(emptyPages(1000), { end: "top", i: 0 }, page(0, PAGE), "c1", 0);
    expect(missing(p, 0, 40)).toEqual([]);
    expect(missing(p, 90, 130)).toEqual([{ end: "top", i: 1 }]);
    p = withPage(p, { end: "top", i: 1 }, page(100, PAGE), "c2", 90);
    expect(p.starts).toEqual([null, "c1", "c2"]);
    expect(missing(p, 90, 130)).toEqual([]);
  });

  it("walks towards the middle from the nearer end, one page at a time", () => {
    const p = emptyPages(100_000);
    expect(missing(p, 30_000, 30_040)).toEqual([{ end: "top", i: 0 }]);
    expect(missing(p, 70_000, 70_040)).toEqual([{ end: "bottom", i: 0 }]);
  });

  it("drops rows far from the view", () => {
    let p = withPage(emptyPages(100_000), { end: "top", i: 0 }, page(0, PAGE), "c1", 0);
    p = withPage(p, { end: "bottom", i: 0 }, page(0, PAGE), "d1", 99_950);
    expect(rowAt(p, 0)).toBeUndefined();
    expect(rowAt(p, 99_999)?.id).toBe("j0");
  });

  it("notices a list shorter than its count", () => {
    const p = withPage(emptyPages(150), { end: "top", i: 0 }, page(0, 40), null, 0);
    expect(p.stale).toBe(true);
    const whole = withPage(emptyPages(40), { end: "top", i: 0 }, page(0, 40), null, 0);
    expect(whole.stale).toBe(false);
  });
});
