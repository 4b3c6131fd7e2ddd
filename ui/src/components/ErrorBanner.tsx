// Shows a failed command's error code and message.
import type { Shown } from "../errors";

/** The error as the engine named it, with an optional way to try again. */
export function ErrorBanner({ error, onRetry }: { error: Shown; onRetry?: () => void }) {
  return (
    <div className="error-banner" role="alert">
      <code className="error-code">{error.code}</code>
      <span className="error-message">{error.message}</span>
      {onRetry !== undefined && (
        <button type="button" className="button" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}
