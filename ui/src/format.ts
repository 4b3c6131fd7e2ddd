// Small display helpers shared by the screens: ids, times, sizes.

/** The tail of a UUIDv7: its head is a timestamp, so jobs made together share it. */
export function shortId(id: string): string {
  return id.length > 8 ? `…${id.slice(-8)}` : id;
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto", style: "narrow" });
const exact = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/** "12 s ago", "3 hr. ago", … for an RFC 3339 time, measured from `now` (ms since the epoch). */
export function timeAgo(iso: string, now: number): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const seconds = Math.round((at - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 5) return "just now";
  if (abs < 60) return relative.format(seconds, "second");
  if (abs < 3600) return relative.format(Math.round(seconds / 60), "minute");
  if (abs < 86400) return relative.format(Math.round(seconds / 3600), "hour");
  if (abs < 30 * 86400) return relative.format(Math.round(seconds / 86400), "day");
  return exact.format(at);
}

/** The local date and time with seconds, plus the stored UTC form, for a hover title. */
export function exactTime(iso: string): string {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : `${exact.format(at)} (${iso})`;
}

/** "812 B", "64.0 KiB", "4.8 MiB": a length in bytes, in the units SPEC §13 speaks of. */
export function byteSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
