// Times and durations as people read them.

// Each format is made once, on first use: toLocaleTimeString and
// toLocaleDateString with options make a formatter a call, which a list of a
// hundred rows, each saying when, paid on every render; and making one costs
// milliseconds, so none is made before it is needed.
/** @param {string|string[]} locale @param {Intl.DateTimeFormatOptions} opts */
const format = (locale, opts) => {
  /** @type {Intl.DateTimeFormat|undefined} */
  let f;
  return (/** @type {Date} */ d) => (f ??= new Intl.DateTimeFormat(locale, opts)).format(d);
};
const clockFormat = format([], { hour: '2-digit', minute: '2-digit' });
const dayFormat = format('en-GB', { day: 'numeric', month: 'short' });
const yearDayFormat = format('en-GB', { day: 'numeric', month: 'short', year: 'numeric' });

/** @param {string} iso @returns {string} "14:03" */
export const clock = (iso) => clockFormat(new Date(iso));

/**
 * A day as people say it: "3 Jan", with the year when it is not this one
 * ("3 Jan 2024").
 * @param {string} iso
 */
export function day(iso) {
  const d = new Date(iso);
  return (d.getFullYear() === new Date().getFullYear() ? dayFormat : yearDayFormat)(d);
}

/**
 * A time as people read it in a log: "14:03" today, "3 Jan 14:03" on an
 * earlier day (an imported session reads as when it happened).
 * @param {string} iso
 */
export function when(iso) {
  const d = new Date(iso);
  return d.toDateString() === new Date().toDateString() ? clock(iso) : `${day(iso)} ${clock(iso)}`;
}

/**
 * A duration, short: "0.4 s", "12 s", "3 min 20 s", "2 h 5 min".
 * @param {number} ms
 */
export function duration(ms) {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/**
 * A duration to the minute, for how long something has been so: "12 s",
 * "3 min", "2 h 5 min"; a view kept open all day need not tick each second.
 * @param {number} ms
 */
export function roughly(ms) {
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${Math.floor(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** @param {string} a @param {string} b milliseconds from a to b */
export const between = (a, b) => Date.parse(b) - Date.parse(a);

/**
 * A <time> element showing when (the clock time, with the day when not
 * today; or the text given), the full date as its title.
 * @param {string} iso
 * @param {string} [text]
 */
export function timeEl(iso, text = when(iso)) {
  const t = document.createElement('time');
  t.dateTime = iso;
  t.textContent = text;
  t.title = new Date(iso).toLocaleString();
  return t;
}

/** @param {string} iso "just now", "5 min ago", "3 h ago", a day ("3 Jan") */
export function ago(iso) {
  const secs = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (secs < 60) return 'just now';
  if (secs < 3600) return `${Math.floor(secs / 60)} min ago`;
  if (secs < 86400) return `${Math.floor(secs / 3600)} h ago`;
  return day(iso);
}
