import { describe, expect, it } from "vitest";

import { clicked, edited, startDraft } from "./draft";

describe("a Submit draft", () => {
  it("keeps its key for every click", () => {
    let d = startDraft("{}", "k1");
    for (let i = 0; i < 5; i++) d = clicked(d);
    expect(d.key).toBe("k1");
    expect(d.submitted).toBe(true);
  });

  it("keeps its key while the intent is edited before a submit", () => {
    const d = edited(startDraft("{}", "k1"), '{"a": 1}', () => "k2");
    expect(d).toEqual({ key: "k1", intent: '{"a": 1}', submitted: false });
  });

  it("gets a new key when the intent is edited after a submit", () => {
    const d = edited(clicked(startDraft("{}", "k1")), '{"a": 1}', () => "k2");
    expect(d).toEqual({ key: "k2", intent: '{"a": 1}', submitted: false });
    expect(clicked(d).key).toBe("k2");
  });

  it("keeps its key when the text is set to what it already is", () => {
    const d = clicked(startDraft("{}", "k1"));
    expect(edited(d, "{}", () => "k2")).toBe(d);
  });
});
