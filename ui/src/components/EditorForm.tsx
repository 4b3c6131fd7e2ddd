// The frame of a form that adds or edits one named thing (a provider, a contract): its heading,
// the error that names no field, a note, and the Save and Close buttons around the fields.
import type { ReactNode } from "react";

interface Props {
  /** What the form edits, as its heading, class and test ids name it: "provider", "contract". */
  noun: string;
  /** The name of the one edited, or null when the form adds a new one. */
  name: string | null;
  busy: boolean;
  /** The error of the whole form, shown above the buttons. */
  formError: string | undefined;
  /** Shown between the form's error and the buttons. */
  note: ReactNode;
  onSave: () => void | Promise<void>;
  onClose: () => void;
  children: ReactNode;
}

/** A form that adds or edits one named thing: the fields are its children. */
export function EditorForm({ noun, name, busy, formError, note, onSave, onClose, children }: Props) {
  const editing = name !== null;
  return (
    <form
      className={`card ${noun}-editor`}
      aria-label={editing ? `Edit ${noun} ${name}` : `Add a ${noun}`}
      data-testid={`${noun}-form`}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void onSave();
      }}
    >
      <h3>{editing ? <>Edit <code>{name}</code></> : `Add a ${noun}`}</h3>
      {children}
      {formError !== undefined && (
        <p className="form-error" role="alert" data-testid={`${noun}-error-form`}>
          {formError}
        </p>
      )}
      {note}
      <div className="actions">
        <button type="submit" className="button primary" disabled={busy} data-testid={`${noun}-save`}>
          {editing ? `Save ${noun}` : `Add ${noun}`}
        </button>
        <button type="button" className="button" onClick={onClose} data-testid={`${noun}-cancel`}>
          Close
        </button>
      </div>
    </form>
  );
}
