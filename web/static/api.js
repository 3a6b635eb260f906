// The one fetch wrapper: every call to Tack's API goes through here.

/**
 * @typedef {{pending: number, inProgress: number, completed: number}} Counts
 * @typedef {'pending'|'in_progress'|'completed'} Status
 * @typedef {{id?: string, content: string, status: Status, updatedAt?: string,
 *   createdAt?: string|null, startedAt?: string|null, completedAt?: string|null,
 *   activeForm?: string, blockedBy?: string[], owner?: string, taskId?: string, description?: string}} Todo
 * @typedef {{id: string, title: string, untitled?: boolean, hooked?: boolean, owner?: string, createdAt: string, updatedAt: string, lastSeq: number,
 *   turn: {number: number, open: boolean}, todoCounts: Counts,
 *   agent?: string|null, cwd?: string|null, parentId?: string|null, planLifetime?: 'turn'|'session',
 *   state?: 'working'|'needs_you'|'idle'|'ended', stateSince?: string, needsYou?: NeedsYou, goal?: Goal|null}} Session
 * @typedef {{text: string, status: 'active'|'met'|'cleared'|'blocked'|'paused', setAt: string, by: 'user'|'agent'}} Goal
 * @typedef {{kind: 'permission'|'question'|'plan', message: string, tool?: string, input?: string}} NeedsYou
 * @typedef {{seq: number, type: string, turn: number, at: string, receivedAt?: string, data: any}} TackEvent
 * @typedef {{sessionId: string, version: number, standing: boolean, todos: Todo[], counts: Counts,
 *   updatedAt: string|null}} TodosView
 * @typedef {{lastSeq: number, turn: {number: number, open: boolean}, todos: Todo[],
 *   todosVersion: number, standing: boolean}} Snapshot
 * @typedef {{events: TackEvent[], hasMore: boolean, snapshot?: Snapshot}} HistoryPage
 * @typedef {{id: string, content: string, from: Status|null, to: Status|null}} Change
 * @typedef {{version: number, at: string, by: string, todos: Todo[], changes: Change[]}} Version
 * @typedef {{versions: Version[], hasMore: boolean}} VersionPage
 * @typedef {{principal: {id: string, name: string, admin?: boolean}, scope: string, via: string, auth: string}} Whoami
 */

/** An API failure, carrying the server's error code. */
export class APIError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * GETs a path of the API and returns its JSON body.
 * @param {string} path
 * @returns {Promise<any>}
 */
export function get(path) {
  return send('GET', path);
}

/**
 * Sends a request to the API with a JSON body (every unsafe request carries
 * `Content-Type: application/json`, which the server insists on) and
 * returns the JSON answer; a failure throws an APIError.
 * @param {string} method
 * @param {string} path
 * @param {any} [body]
 * @returns {Promise<any>}
 */
export async function send(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { Accept: 'application/json' };
  if (method !== 'GET') headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await res.json().catch(() => null);
  if (!res.ok) {
    const err = answer?.error ?? {};
    throw new APIError(res.status, err.code ?? 'http', err.message ?? `${res.status} ${res.statusText}`);
  }
  return answer;
}

let leaving = false;
/**
 * Sends the page to /login, once: a sign-out is heard by the button that
 * made it and by every socket it closes, and a second navigation would
 * abort the first.
 */
export function toLogin() {
  if (leaving) return;
  leaving = true;
  location.assign('/login');
}

/** @type {Promise<Whoami|null>|undefined} */
let whoami;
/**
 * Who the page acts as (GET /me), asked once per page; null when it cannot be read.
 * @returns {Promise<Whoami|null>}
 */
export function me() {
  whoami ??= get('/me').catch(() => null);
  return whoami;
}

/** @param {string} id @returns {string} */
export const sessionPath = (id) => `/sessions/${encodeURIComponent(id)}`;
