// Entry point: picks the view from the path. "/" lists sessions, "/s/<id>"
// shows one; both are the same document, so links and reloads just work.

import { showList } from './list.js';
import { Live } from './live.js';
import { Notifier } from './notify.js';
import { showSession } from './session.js';

/** @param {string} sel */
const $ = (sel) => /** @type {HTMLElement} */ (document.querySelector(sel));

/** The quiet "reconnecting…" indicator, shown while a socket is away. */
const conn = $('[data-conn]');
/** @param {boolean} connected */
const onStatus = (connected) => {
  conn.hidden = connected;
  document.body.dataset.live = connected ? 'connected' : 'reconnecting';
};

/** @param {unknown} err */
const fail = (err) => {
  const box = $('[data-error]');
  box.textContent = err instanceof Error ? err.message : String(err);
  if (match) {
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
// page opens the feed for them when they are on.
const notifier = new Notifier();
notifier.bind(/** @type {HTMLButtonElement} */ ($('[data-notify]')));

const match = location.pathname.match(/^\/s\/([^/]+)$/);
const view = match
  ? showSession($('[data-view="session"]'), decodeURIComponent(match[1]), onStatus)
  : showList($('[data-view="list"]'), onStatus, (s) => notifier.observe(s));
view.catch(fail);
if (match && notifier.on) {
  new Live({ path: () => '/live', onMessage: (msg) => { if (msg.type === 'session') notifier.observe(msg.session); } });
}
