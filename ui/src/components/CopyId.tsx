// An id or key in monospace, shortened, with a button that copies the whole of it.
import { useState } from "react";

import { shortId } from "../format";

interface Props {
  value: string;
  /** Show it whole instead of shortened. */
  full?: boolean;
  testId?: string;
}

export function CopyId({ value, full = false, testId }: Props) {
  const [copied, setCopied] = useState(false);
  const copy = () => {
    void navigator.clipboard
      ?.writeText(value)
      .then(() => {
        setCopied(true);
        window.setTimeout(() => setCopied(false), 1200);
      })
      .catch(() => undefined);
  };
  return (
    <span className="copy-id">
      <code className="id" title={value} data-testid={testId}>
        {full ? value : shortId(value)}
      </code>
      <button type="button" className="icon-button" onClick={copy} aria-label={`Copy ${value}`} title="Copy">
        {copied ? "copied" : "copy"}
      </button>
    </span>
  );
}
