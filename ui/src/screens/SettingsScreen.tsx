// The Settings screen: where the app keeps its data, and whom it acts for.
import { useRead } from "../api";
import { commands } from "../bindings";
import { CopyId } from "../components/CopyId";
import { ErrorBanner } from "../components/ErrorBanner";

export function SettingsScreen() {
  const settings = useRead(() => commands.settings(), []);
  return (
    <section className="screen settings" aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      {settings.error !== null && <ErrorBanner error={settings.error} />}
      {settings.data !== null && (
        <dl className="facts">
          <dt>Database</dt>
          <dd>
            <CopyId value={settings.data.db_path} full testId="db-path" />
          </dd>
          <dt>Profile (owner)</dt>
          <dd>
            <code>{settings.data.owner}</code>
          </dd>
        </dl>
      )}
      <p className="muted">
        The <code>onejob</code> command line uses the same database by default, so jobs it submits
        appear here as they happen.
      </p>
    </section>
  );
}
