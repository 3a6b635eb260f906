// Entry point: picks the view from the path. "/" lists sessions, "/s/<id>"
// shows one; both are the same document, so links and reloads just work.
// On a wide screen the page is the fleet board: the list and the session
// side by side, a row opening its session in place (the URL follows, so a
// reload or a link shows the same); until one is chosen, the overview.

import { showList } from './list.js';
import { Live } from './live.js';
import { Notifier } from './notify.js';
import { Overview } from './overview.js';
import { BOARD } from './plan.js';
import { showSession } from './session.js';

/** @param {string} sel */
const $ = (sel) => /** @type {HTMLElement} */ (document.querySelector(sel));

/** The quiet "reconnecting…" indicator, shown while any socket is away. */
const conn = $('[data-conn]');
/** The state of each socket the page shows, by its reporter. @type {Map<object, import('./live.js').LiveState>} */
const sockets = new Map();
/**
 * A reporter for one more socket: the page is live once every socket is
 * open (the list's feed and the session's, side by side on the board), and
 * away while any one is.
 * @returns {(state: import('./live.js').LiveState) => void}
 */
const socketStatus = () => {
  const key = {};
  return (state) => {
    if (state === 'stopped') sockets.delete(key);
    else sockets.set(key, state);
    const states = new Set(sockets.values());
    conn.hidden = !states.has('away');
    document.body.dataset.live = states.has('away') ? 'reconnecting' : states.has('connecting') ? 'connecting' : 'connected';
  };
};

/** The session of a path, or null for the list. @param {string} path */
const sessionOf = (path) => {
  const m = path.match(/^\/s\/([^/]+)$/);
  return m ? decodeURIComponent(m[1]) : null;
};

/** @param {unknown} err @param {boolean} [unknownSession] */
const fail = (err, unknownSession = false) => {
  const box = $('[data-error]');
  box.textContent = err instanceof Error ? err.message : String(err);
  if (unknownSession) {
    // A session that is not there (a stale link, a typo): the way back.
    const back = document.createElement('a');
    back.href = '/';
    back.textContent = 'Back to all sessions';
    box.append(' ', back);
  }
  box.hidden = false;
  box.querySelector('a')?.focus();
};

// Notifications, once asked for: the list hears every summary; a session's
// page without the list opens the feed for them when they are on.
const notifier = new Notifier();
/** Every session summary the page hears, for the session shown (showSession's summaries). */
const summaries = new EventTarget();
/** @param {import('./list.js').Summary} s */
const heard = (s) => {
  notifier.observe(s);
  summaries.dispatchEvent(new CustomEvent('summary', { detail: s }));
};
notifier.bind(/** @type {HTMLButtonElement} */ ($('[data-notify]')));

const wide = window.matchMedia(BOARD);
const panes = $('[data-panes]');
const template = /** @type {HTMLTemplateElement} */ ($('[data-session-template]'));
/** The fleet's answers, until a session is chosen on the board. */
const overview = new Overview($('[data-overview]'));

/** @type {Promise<import('./list.js').ListView>|null} */
let list = null;
const startList = () => {
  list ??= showList($('[data-view="list"]'), socketStatus(), heard, (shown) => overview.update(shown));
  list.catch((err) => fail(err));
  return list;
};

/** The session shown: its id and what stops it. @type {{id: string, stop: AbortController}|null} */
let shown = null;

/** Shows the session of the path (or none), and the list beside it on the board. */
const route = () => {
  const id = sessionOf(location.pathname);
  const board = wide.matches;
  $('[data-error]').hidden = true;
  document.body.dataset.route = id ? 'session' : 'list';
  document.body.dataset.board = String(board);
  if (board || !id) startList().then((l) => l.refresh(), () => {});
  overview.show(!id && board);
  if (!id) {
    shown?.stop.abort();
    shown = null;
    document.querySelector('[data-view="session"]')?.remove();
    document.title = 'Tack';
    $('[data-title]').textContent = 'Sessions';
    $('[data-session-state]').hidden = true;
    /** @type {HTMLElement} */ ($('[data-skip-plan]')).hidden = true;
    return;
  }
  if (shown?.id === id) return;
  shown?.stop.abort();
  const stop = new AbortController();
  shown = { id, stop };
  const root = /** @type {HTMLElement} */ (/** @type {HTMLElement} */ (template.content.firstElementChild).cloneNode(true));
  root.hidden = true;
  showSession(root, id, socketStatus(), {
    signal: stop.signal,
    summaries,
    // The view replaces the one before it once it has something to show.
    mount: () => {
      document.querySelector('[data-view="session"]')?.remove();
      panes.append(root);
    },
  }).catch((err) => {
    if (stop.signal.aborted) return;
    document.querySelector('[data-view="session"]')?.remove();
    fail(err, true);
  });
};

// On the board a session's link opens it beside the list, keeping the
// filters in the URL; elsewhere (a phone, a new tab) it is a plain link.
document.addEventListener('click', (e) => {
  const a = /** @type {HTMLElement} */ (e.target).closest?.('a[href^="/s/"]');
  if (!(a instanceof HTMLAnchorElement) || !wide.matches) return;
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  const url = new URL(a.href);
  if (url.pathname + url.search !== location.pathname + location.search) history.pushState(null, '', url.pathname + url.search);
  const fromOverview = a.closest('[data-overview]') !== null;
  route();
  // The overview gives way to the session: focus goes to its row in the
  // list, rather than to nowhere.
  if (fromOverview) {
    const id = sessionOf(url.pathname) ?? '';
    startList().then(() => /** @type {HTMLElement|null} */ (document.querySelector(`[data-view="list"] [data-session-id="${CSS.escape(id)}"] a.session-title`))?.focus(), () => {});
  }
});
window.addEventListener('popstate', route);
// Widened past the board's edge on a session's page: the list joins it.
wide.addEventListener('change', route);

route();
if (!wide.matches && sessionOf(location.pathname) && notifier.on) {
  new Live({ path: () => '/live', onMessage: (msg) => { if (msg.type === 'session') heard(msg.session); } });
}
