// Turns whatever a command rejected with into the SPEC §11 shape the UI shows.

/** What an error banner shows: the code, as on the wire, and the message. */
export interface Shown {
  code: string;
  message: string;
  /** The engine's details, when it gave any (the existing job of a conflict, a field). */
  details?: Record<string, unknown>;
}

/**
 * An engine error (the bindings' `Error` union) as is; anything else, such as a Tauri failure
 * that arrives as a bare string, under the code `ipc`.
 */
export function shown(error: unknown): Shown {
  if (typeof error === "object" && error !== null && "code" in error && "message" in error) {
    const { code, message } = error;
    if (typeof code === "string" && typeof message === "string") {
      const details = "details" in error ? error.details : null;
      return typeof details === "object" && details !== null
        ? { code, message, details: { ...details } }
        : { code, message };
    }
  }
  return { code: "ipc", message: typeof error === "string" ? error : String(error) };
}

/** The existing job an `idempotency_conflict` names, if it does. */
export function existingJob(error: Shown): string | null {
  const id = error.details?.["existing_job_id"];
  return typeof id === "string" ? id : null;
}
