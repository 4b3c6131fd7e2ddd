import { describe as group, expect, it } from "vitest";

import { describe, EVERY_JOB, filterOf, narrows, utcOf } from "./listFilter";

group("the Jobs list's filter", () => {
  it("sends a blank term as none and a local time in UTC", () => {
    const filter = filterOf({
      status: "unknown",
      search: "  ",
      provider: "sandbox",
      errorKind: " connection_broken ",
      createdAfter: "2026-12-03T09:15",
      createdBefore: "",
    });
    expect(filter).toEqual({
      status: "unknown",
      search: null,
      provider: "sandbox",
      error_kind: "connection_broken",
      created_after: new Date(2026, 11, 3, 9, 15).toISOString(),
      created_before: null,
    });
    expect(utcOf("not a time")).toBeNull();
  });

  it("narrows the list with any one term, and says which in words when nothing matches", () => {
    expect(narrows(EVERY_JOB)).toBe(false);
    expect(narrows(null)).toBe(false);
    expect(narrows({ ...EVERY_JOB, error_kind: "lease_expired" })).toBe(true);
    expect(narrows({ ...EVERY_JOB, created_before: "2026-12-03T00:00:00.000Z" })).toBe(true);
    expect(describe({ ...EVERY_JOB, status: "unknown", provider: "sandbox", error_kind: "soft_timeout" })).toBe(
      "No unknown jobs on sandbox whose open attempt is soft_timeout.",
    );
    expect(describe({ ...EVERY_JOB, search: "order-" })).toBe("No jobs matching “order-”.");
  });
});
