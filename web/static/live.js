// The one websocket client: it reconnects after a drop with backoff and
// lets its owner resume where it left off (the URL is asked anew each time).

/**
 * @typedef {object} LiveOptions
 * @property {() => string} path   the path to connect to, e.g. `/sessions/x/live?after=12`
 * @property {(msg: any) => void} onMessage   called with each parsed message
 * @property {() => void} [onOpen]   called on every (re)connect
 * @property {(connected: boolean) => void} [onStatus]   connection shown or lost
 */

const MIN_DELAY = 250;
const MAX_DELAY = 10_000;

export class Live {
  /** @param {LiveOptions} opts */
  constructor(opts) {
    this.opts = opts;
    this.delay = MIN_DELAY;
    /** @type {WebSocket|null} */
    this.ws = null;
    this.stopped = false;
    this.connect();
  }

  connect() {
    const url = new URL(this.opts.path(), location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = () => {
      this.opts.onStatus?.(true);
      this.opts.onOpen?.();
    };
    ws.onmessage = (e) => {
      this.delay = MIN_DELAY; // only a socket that delivers resets the backoff
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch {
        return;
      }
      this.opts.onMessage(msg);
    };
    ws.onclose = () => {
      if (this.stopped || this.ws !== ws) return;
      this.opts.onStatus?.(false);
      const wait = this.delay * (0.75 + Math.random() / 2);
      this.delay = Math.min(this.delay * 2, MAX_DELAY);
      this.timer = setTimeout(() => this.connect(), wait);
    };
  }

  /** Closes the socket for good. */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.ws?.close();
  }
}
