// One field of a form laid out in rows (the provider form, the budget form): its label, the
// input, its error in words when it has one, and one line on what it means.
import type { ReactNode } from "react";

interface Props {
  /** The form's noun, as its test ids name it: "provider", "budget". */
  prefix: string;
  /** The field, as the configuration and the errors name it. */
  field: string;
  label: ReactNode;
  error: string | undefined;
  /** What the field means, beneath it. */
  hint: ReactNode;
  /** The input, and anything that stands beside it. */
  children: ReactNode;
}

/** The id, test id and accessibility attributes of a row's input. */
export function inputProps(prefix: string, field: string, error: string | undefined) {
  const id = `${prefix}-${field}`;
  return { id, "data-testid": id, "aria-invalid": error !== undefined, "aria-describedby": `${id}-hint` };
}

export function FormRow({ prefix, field, label, error, hint, children }: Props) {
  const id = `${prefix}-${field}`;
  return (
    <div className="form-row">
      <label className="form-label" htmlFor={id}>
        {label}
      </label>
      <div className="form-input">
        {children}
        <FieldError prefix={prefix} field={field} error={error} />
        <span className="hint" id={`${id}-hint`}>
          {hint}
        </span>
      </div>
    </div>
  );
}

/** An error in words beside its field. */
export function FieldError({ field, error, prefix = "provider" }: { field: string; error: string | undefined; prefix?: string }) {
  if (error === undefined) return null;
  return (
    <span className="field-error" role="alert" data-testid={`${prefix}-error-${field}`}>
      {error}
    </span>
  );
}
