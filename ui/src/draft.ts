// A Submit draft (SPEC §13): its idempotency key is made when the draft starts and kept for
// every click, until the intent is edited after a submit — then it is a new draft.

/** One form draft. */
export interface Draft {
  key: string;
  intent: string;
  /** Whether this draft's intent has been submitted at least once. */
  submitted: boolean;
}

/** A fresh key: random, printable ASCII, unique per draft. */
export function newKey(): string {
  return `draft-${crypto.randomUUID()}`;
}

export function startDraft(intent: string, key: string = newKey()): Draft {
  return { key, intent, submitted: false };
}

/** The draft after the intent's text is edited: a new key once the old one was used. */
export function edited(draft: Draft, intent: string, key: () => string = newKey): Draft {
  if (intent === draft.intent) return draft;
  return draft.submitted ? { key: key(), intent, submitted: false } : { ...draft, intent };
}

/** The draft after a click on Submit: same key, same intent, now submitted. */
export function clicked(draft: Draft): Draft {
  return draft.submitted ? draft : { ...draft, submitted: true };
}
