import { describe, expect, it } from "vitest";

import { answered, asDraft, clicked, keyed, renewed, shownOutcomes, startDraft, type Outcome } from "./draft";

const fresh = (k: string) => () => k;

describe("a Submit draft", () => {
  it("keeps its key for every click of one intent", () => {
    let d = startDraft("{}", "k1");
    for (let i = 0; i < 5; i++) d = clicked(d, "fp-a", fresh("k2"));
    expect(d.key).toBe("k1");
    expect(d.submitted).toEqual({ key: "k1", fingerprint: "fp-a" });
  });

  it("keeps its key whatever the intent becomes before a submit", () => {
    const d = startDraft("{}", "k1");
    expect(keyed(d, "fp-b", fresh("k2"))).toBe(d);
  });

  it("gets a new key for another intent after a submit, and keeps that one while it is not sent", () => {
    const sent = clicked(startDraft("{}", "k1"), "fp-a");
    const other = keyed(sent, "fp-b", fresh("k2"));
    expect(other.key).toBe("k2");
    expect(keyed(other, "fp-c", fresh("k3")).key).toBe("k2");
    expect(clicked(other, "fp-b").submitted).toEqual({ key: "k2", fingerprint: "fp-b" });
  });

  it("goes back to the submitted key when the intent is the submitted one again", () => {
    const sent = clicked(startDraft("{}", "k1"), "fp-a");
    const back = keyed(keyed(sent, "fp-b", fresh("k2")), "fp-a", fresh("k3"));
    expect(back.key).toBe("k1");
  });

  it("decides nothing on an intent that is not valid", () => {
    const other = keyed(clicked(startDraft("{}", "k1"), "fp-a"), "fp-b", fresh("k2"));
    expect(keyed(other, null, fresh("k3"))).toBe(other);
  });

  it("shows only the outcomes of the key the next click sends, in click order", () => {
    const line = (click: number, key: string): Outcome => ({ click, key, kind: "replayed", job: { id: "j", status: "queued" } });
    let d = clicked(startDraft("{}", "k1"), "fp-a");
    d = answered(answered(d, line(2, "k1")), line(1, "k1"));
    expect(shownOutcomes(d).map((o) => o.click)).toEqual([1, 2]);
    const other = keyed(d, "fp-b", fresh("k2"));
    expect(shownOutcomes(other)).toEqual([]);
    expect(shownOutcomes(keyed(other, "fp-a")).map((o) => o.click)).toEqual([1, 2]);
  });

  it("starts over under a new key on New draft, the text kept", () => {
    const d = renewed(clicked(startDraft("{}", "k1"), "fp-a"), "k2");
    expect(d).toMatchObject({ key: "k2", intent: "{}", submitted: null, outcomes: [] });
  });

  it("is read back from storage only when it has a draft's shape", () => {
    const d = clicked(startDraft("{}", "k1"), "fp-a");
    expect(asDraft(JSON.parse(JSON.stringify(d)))).toEqual(d);
    expect(asDraft({ ...d, submitted: { key: "k1" } })).toBeNull();
    expect(asDraft({ key: "k1", intent: "{}" })).toBeNull();
    expect(asDraft("draft")).toBeNull();
  });
});
