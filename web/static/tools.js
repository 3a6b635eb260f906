// Tool calls as people read them: the useful argument in the summary, the
// result without its JSON wrapping, and the todo tools of every dialect.

/** The names under which agents write their todo list. */
export const TODO_TOOLS = new Set(['todo_write', 'TodoWrite', 'update_plan']);

// The argument that says what a call does, by tool; a working directory,
// a timeout or a description of intent never does.
const GIST_KEYS = ['command', 'cmd', 'file_path', 'path', 'pattern', 'query', 'url', 'prompt', 'description', 'input', 'patch'];
const NEVER_GIST = new Set(['workdir', 'cwd', 'timeout', 'timeout_ms', 'yield_time_ms', 'max_output_tokens', 'justification', 'sandbox_permissions']);

/**
 * The one-line gist of a call's arguments: a shell call's command (codex's
 * `["bash","-lc","npm test"]` read as `npm test`), else the first telling
 * string argument.
 * @param {any} args
 */
export function gist(args) {
  if (args == null) return '';
  if (typeof args !== 'object') return String(args);
  for (const k of GIST_KEYS) {
    const v = args[k];
    if (typeof v === 'string' && v.trim()) return firstLine(v);
    if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string')) return firstLine(shellWords(v));
  }
  for (const [k, v] of Object.entries(args)) {
    if (!NEVER_GIST.has(k) && typeof v === 'string' && v.trim()) return firstLine(v);
  }
  return '';
}

/** @param {string[]} argv */
function shellWords(argv) {
  if (argv.length === 3 && /(^|\/)(ba|z)?sh$/.test(argv[0]) && /^-l?c$/.test(argv[1])) return argv[2];
  return argv.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ');
}

/** @param {string} s */
const firstLine = (s) => s.trim().split('\n', 1)[0];

/**
 * A result's content made readable: codex's `{"output": …, "metadata": …}`
 * unwrapped (the exit code and duration kept as a note), other JSON
 * indented, plain text as it is.
 * @param {string} content
 * @returns {{text: string, note: string}}
 */
export function readable(content) {
  const s = String(content ?? '');
  const t = s.trim();
  if (!(t.startsWith('{') || t.startsWith('[') || t.startsWith('"'))) return { text: s, note: '' };
  let v;
  try {
    v = JSON.parse(t);
  } catch {
    return { text: s, note: '' };
  }
  if (typeof v === 'string') return { text: v, note: '' };
  if (v && typeof v === 'object' && !Array.isArray(v) && typeof v.output === 'string') {
    const m = v.metadata ?? {};
    const note = [
      m.exit_code !== undefined ? `exit ${m.exit_code}` : '',
      typeof m.duration_seconds === 'number' ? `${m.duration_seconds} s` : '',
    ].filter(Boolean).join(' · ');
    return { text: v.output, note };
  }
  return { text: JSON.stringify(v, null, 2), note: '' };
}

/**
 * The list a todo tool call carried, in Tack's shape, whatever its dialect:
 * `todos` of todo_write and TodoWrite, `plan` (`step`) of update_plan.
 * @param {any} args
 * @returns {import('./api.js').Todo[]}
 */
export function todoArgs(args) {
  const list = Array.isArray(args?.todos) ? args.todos : Array.isArray(args?.plan) ? args.plan : [];
  return list.map((/** @type {any} */ t) => ({
    content: String(t?.content ?? t?.step ?? ''),
    status: ['pending', 'in_progress', 'completed'].includes(t?.status) ? t.status : 'pending',
  }));
}
