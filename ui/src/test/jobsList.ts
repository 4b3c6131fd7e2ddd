// What every test of the Jobs screen stands in for alike: the list's two reads as mocks, reset
// after each test, no providers, and the ResizeObserver the list needs.
import { cleanup } from "@testing-library/react";
import { afterEach, beforeAll, vi } from "vitest";

import { commands } from "../bindings";
import { stubResizeObserver } from "./dom";

/**
 * Sets up and tears down a test file of the Jobs screen, whose bindings are mocked with
 * `jobsScreen()` (test/bindings.ts); returns the list and count reads to answer.
 */
export function mockJobsList() {
  const listJobs = vi.mocked(commands.listJobs);
  const countJobs = vi.mocked(commands.countJobs);
  beforeAll(() => {
    stubResizeObserver();
    vi.mocked(commands.providers).mockResolvedValue({ status: "ok", data: [] });
  });
  afterEach(() => {
    cleanup();
    listJobs.mockReset();
    countJobs.mockReset();
    vi.useRealTimers();
  });
  return { listJobs, countJobs };
}
