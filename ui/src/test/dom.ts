// What the component tests' simulated DOM lacks, stood in for.

/** happy-dom has no ResizeObserver: one that never reports, for components that observe. */
export function stubResizeObserver(): void {
  globalThis.ResizeObserver ??= class {
    observe() {}
    unobserve() {}
    disconnect() {}
  } as unknown as typeof ResizeObserver;
}
