// The one fetch wrapper: every call to Tack's API goes through here.

/**
 * @typedef {{pending: number, inProgress: number, completed: number}} Counts
 * @typedef {{id?: string, content: string, status: 'pending'|'in_progress'|'completed', updatedAt?: string}} Todo
 * @typedef {{id: string, title: string, createdAt: string, updatedAt: string, lastSeq: number,
 *   turn: {number: number, open: boolean}, todoCounts: Counts}} Session
 * @typedef {{seq: number, type: string, turn: number, at: string, data: any}} TackEvent
 * @typedef {{sessionId: string, version: number, standing: boolean, todos: Todo[], counts: Counts}} TodosView
 * @typedef {{lastSeq: number, turn: {number: number, open: boolean}, todos: Todo[],
 *   todosVersion: number, standing: boolean}} Snapshot
 * @typedef {{events: TackEvent[], hasMore: boolean, snapshot?: Snapshot}} HistoryPage
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
export async function get(path) {
  const res = await fetch(path, { headers: { Accept: 'application/json' } });
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const err = body?.error ?? {};
    throw new APIError(res.status, err.code ?? 'http', err.message ?? `${res.status} ${res.statusText}`);
  }
  return body;
}

/** @param {string} id @returns {string} */
export const sessionPath = (id) => `/sessions/${encodeURIComponent(id)}`;
