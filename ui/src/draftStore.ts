// The window's one Submit draft, kept above the screens: in the window's sessionStorage, so
// leaving the Submit screen, or reloading the window, brings back the text, the form, the key
// and the outcomes as they were. A click's answer lands here even when the screen is gone.
import { useSyncExternalStore } from "react";

import { call } from "./api";
import { commands } from "./bindings";
import { answered, asDraft, clicked, keyed, renewed, startDraft, type Draft } from "./draft";
import type { IntentForm } from "./forms/intentForm";

const STORAGE_KEY = "onejob.submit-draft";

/** The draft as last read or written, with the text it was stored as. */
let held: { raw: string | null; draft: Draft } | null = null;
/** False once sessionStorage refused the draft (too large): it is then kept here alone. */
let storable = true;
const listeners = new Set<() => void>();
/** Clicks are decided one after another, so two quick clicks never pick two keys. */
let clicks: Promise<void> = Promise.resolve();

function storage(): Storage | null {
  try {
    return window.sessionStorage;
  } catch {
    return null;
  }
}

/** The draft now. sessionStorage is its home; the copy held here only spares parsing it again. */
export function currentDraft(): Draft {
  if (held !== null && !storable) return held.draft;
  const raw = storage()?.getItem(STORAGE_KEY) ?? null;
  if (held !== null && held.raw === raw) return held.draft;
  let draft: Draft | null = null;
  try {
    draft = raw === null ? null : asDraft(JSON.parse(raw));
  } catch {
    draft = null;
  }
  return save(draft ?? startDraft());
}

function save(draft: Draft): Draft {
  const raw = JSON.stringify(draft);
  try {
    storage()?.setItem(STORAGE_KEY, raw);
    storable = true;
  } catch {
    storable = false;
  }
  held = { raw, draft };
  return draft;
}

function update(change: (draft: Draft) => Draft): Draft {
  const before = currentDraft();
  const after = change(before);
  if (after !== before) {
    save(after);
    for (const listener of listeners) listener();
  }
  return after;
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The draft, re-rendering the caller whenever it changes. */
export function useDraft(): Draft {
  return useSyncExternalStore(subscribe, currentDraft);
}

/** The engine's fingerprint of an intent, or null when it is not a valid one. */
async function fingerprintOf(intent: string): Promise<string | null> {
  const result = await call(() => commands.fingerprint(intent));
  return result.status === "ok" ? result.data : null;
}

/** After a submit, settles the key for the text now written once its fingerprint is known. */
async function rekey(): Promise<void> {
  const { intent, submitted } = currentDraft();
  if (submitted === null) return;
  const fingerprint = await fingerprintOf(intent);
  update((d) => (d.intent === intent ? keyed(d, fingerprint) : d));
}

/** A change to the intent's text (and to the form it was built from, if it was). */
export function editIntent(intent: string, form?: IntentForm): void {
  update((d) => ({ ...d, intent, form: form ?? d.form }));
  void rekey();
}

/** A change to the form that leaves the intent as it is (no contract chosen yet). */
export function editForm(form: IntentForm): void {
  update((d) => ({ ...d, form }));
}

export function showJson(shown: boolean): void {
  update((d) => ({ ...d, showJson: shown }));
}

/** "New draft": a new key on purpose, the text kept. */
export function newDraft(): void {
  update((d) => renewed(d));
}

/**
 * A click on Submit: the intent as written now is fingerprinted by the engine, given the key
 * the draft rules pick, and sent; the answer is added to the draft's outcomes. `changed` is
 * told once the ledger may have changed.
 */
export function submitDraft(changed: () => void): void {
  const { clicks: click, intent } = update((d) => ({ ...d, clicks: d.clicks + 1 }));
  clicks = clicks.then(async () => {
    const fingerprint = await call(() => commands.fingerprint(intent));
    if (fingerprint.status === "error") {
      update((d) => answered(d, { click, key: d.key, kind: "error", error: fingerprint.error }));
      return;
    }
    const { key } = update((d) => clicked(d, fingerprint.data));
    // Text typed while the click was decided gets its own key decided.
    if (currentDraft().intent !== intent) void rekey();
    void call(() => commands.submit(key, intent)).then((result) => {
      update((d) =>
        answered(
          d,
          result.status === "ok"
            ? {
                click,
                key,
                kind: result.data.replayed ? "replayed" : "submitted",
                job: { id: result.data.job.id, status: result.data.job.status },
              }
            : { click, key, kind: "error", error: result.error },
        ),
      );
      changed();
    });
  });
}
