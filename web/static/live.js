// The one websocket client: it reconnects after a drop with backoff and
// lets its owner resume where it left off (the URL is asked anew each time).
// A sign-in that has ended is not a drop: the page goes to /login.

import { APIError, get, toLogin } from './api.js';

/**
 * @typedef {object} LiveOptions
 * @property {() => string} path   the path to connect to, e.g. `/sessions/x/live?after=12`
 * @property {(msg: any) => void} onMessage   called with each parsed message
 * @property {() => void} [onOpen]   called on every (re)connect
 * @property {(state: LiveState) => void} [onStatus]   told each change of the socket's state
 */

/**
 * A socket's state: 'connecting' until it first opens, 'open', 'away'
 * between a drop and the reconnect, and 'stopped' once closed for good.
 * @typedef {'connecting'|'open'|'away'|'stopped'} LiveState
 */

const MIN_DELAY = 250;
const MAX_DELAY = 10_000;
/** The close code of a socket whose sign-in ended or whose token was revoked. */
const SIGNED_OUT = 4401;

/**
 * Whether the browser's sign-in has ended: asked when a socket could not
 * open, since a refused handshake (401) reaches a page only as code 1006.
 * @returns {Promise<boolean>}
 */
async function signedOut() {
  try {
    await get('/me');
    return false;
  } catch (err) {
    return err instanceof APIError && err.status === 401; // else the server is away: keep retrying
  }
}

export class Live {
  /** @param {LiveOptions} opts */
  constructor(opts) {
    this.opts = opts;
    this.delay = MIN_DELAY;
    /** @type {WebSocket|null} */
    this.ws = null;
    this.stopped = false;
    this.openedAt = 0;
    this.opts.onStatus?.('connecting');
    this.connect();
  }

  connect() {
    const url = new URL(this.opts.path(), location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(url);
    this.ws = ws;
    this.openedAt = 0;
    ws.onopen = () => {
      this.openedAt = Date.now();
      this.opts.onStatus?.('open');
      this.opts.onOpen?.();
    };
    ws.onmessage = (e) => {
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch {
        return;
      }
      this.opts.onMessage(msg);
    };
    ws.onclose = async (e) => {
      if (this.stopped || this.ws !== ws) return;
      if (e.code === SIGNED_OUT || (!this.openedAt && (await signedOut()))) {
        this.stop();
        toLogin();
        return;
      }
      if (this.stopped) return;
      this.opts.onStatus?.('away');
      // A socket that lived a while was fine; start the backoff afresh.
      if (this.openedAt && Date.now() - this.openedAt > 10_000) this.delay = MIN_DELAY;
      const wait = this.delay * (0.75 + Math.random() / 2);
      this.delay = Math.min(this.delay * 2, MAX_DELAY);
      this.timer = setTimeout(() => this.connect(), wait);
    };
  }

  /** Closes the socket for good. */
  stop() {
    if (!this.stopped) this.opts.onStatus?.('stopped');
    this.stopped = true;
    clearTimeout(this.timer);
    this.ws?.close();
  }
}
