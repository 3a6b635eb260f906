// Tool calls as people read them: what a call did (an edit's diff, a
// patch's files, a shell call's command), the useful argument in the
// summary, the result without its JSON wrapping, and the todo tools of
// every dialect. Pure, no DOM: toolview.js draws what readCall reads.

import { counts, diffText } from './diff.js';
import { parsePatch, patchOf } from './patch.js';

/** @typedef {import('./diff.js').DiffLine} DiffLine */
/** @typedef {import('./patch.js').PatchFile} PatchFile */
/** @typedef {{added: number, removed: number}} Stat */

/**
 * A list tool's shape: the key of its list, the key of an item's text, and
 * the agent's spellings of a status, as Tack's.
 * @typedef {{tool: string, list: string, item: string, statuses?: Record<string, string>}} ListTool
 */

/** Tack's own todo_write, which the UI knows without asking. */
const TODO_WRITE = { tool: 'todo_write', list: 'todos', item: 'content' };

/**
 * The list tools by name: todo_write and the agents' tools given.
 * @param {ListTool[]} agents
 * @returns {Map<string, ListTool>}
 */
export function listTools(agents) {
  return new Map([TODO_WRITE, ...agents].map((t) => [t.tool, t]));
}

/**
 * The agents' own list tools the page came with: the server writes the
 * registered ones (Claude Code's TodoWrite, codex's update_plan, …) into
 * #tack-list-tools, so a new agent's tool needs no line here. None without
 * a page (the node tests, which pass their own to listTools).
 * @returns {ListTool[]}
 */
function served() {
  const text = globalThis.document?.getElementById('tack-list-tools')?.textContent;
  try {
    const tools = JSON.parse(text || '[]');
    return Array.isArray(tools) ? tools.filter((t) => t && typeof t.tool === 'string' && typeof t.list === 'string' && typeof t.item === 'string') : [];
  } catch {
    return [];
  }
}

/** The tools under which agents write their todo list, by name. */
export const TODO_TOOLS = listTools(served());

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
function gist(args) {
  if (args == null) return '';
  if (typeof args !== 'object') return firstLine(String(args));
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

/**
 * An argv as a command line: a shell's `-c` script as it is, other words
 * quoted as a POSIX shell would need them.
 * @param {string[]} argv
 */
function shellWords(argv) {
  if (argv.length === 3 && /(^|\/)(ba|z)?sh$/.test(argv[0]) && /^-l?c$/.test(argv[1])) return argv[2];
  return argv.map((a) => (a === '' || /[^\w@%+=:,./-]/.test(a) ? `'${a.replaceAll("'", `'\\''`)}'` : a)).join(' ');
}

/** @param {string} s */
const firstLine = (s) => s.trim().split('\n', 1)[0];

/**
 * A result's content made readable: codex's `{"output": …, "metadata": …}`
 * unwrapped and its plain-text header ("Exit code: 0", "Wall time: …",
 * "Output:") taken off, the exit code and duration kept as a note; other
 * JSON indented, plain text as it is.
 * @param {string} content
 * @returns {{text: string, note: string}}
 */
export function readable(content) {
  const s = String(content ?? '');
  const t = s.trim();
  if (!(t.startsWith('{') || t.startsWith('[') || t.startsWith('"'))) return execHeader(s) ?? { text: s, note: '' };
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

// The lines codex puts before a command's output: "Exit code: 0",
// "Wall time: 0.2 seconds", "Process exited with code 1", "Chunk ID: …", up
// to a line "Output:".
const HEADER_LINE = /^(?:(Command|Chunk ID|Wall time|Exit code|Original token count|Total output lines): .*|Process (?:exited with code|running with session ID) \d+)$/;

/**
 * @param {string} s
 * @returns {{text: string, note: string} | null}
 */
function execHeader(s) {
  const lines = s.split('\n');
  let i = 0;
  while (i < lines.length && HEADER_LINE.test(lines[i])) i++;
  if (i === 0 || lines[i] !== 'Output:') return null;
  const head = lines.slice(0, i).join('\n');
  const exit = /(?:^Exit code: |^Process exited with code )(\d+)$/m.exec(head)?.[1];
  const wall = /^Wall time: ([\d.]+) seconds?$/m.exec(head)?.[1];
  const note = [exit !== undefined ? `exit ${exit}` : '', wall ? `${+Number(wall).toFixed(2)} s` : ''].filter(Boolean).join(' · ');
  return { text: lines.slice(i + 1).join('\n'), note };
}

/**
 * A call's arguments as a value: an object as the API serves it, or a
 * string holding JSON (as some agents send them) parsed; any other string
 * stays a string (a custom tool's raw input).
 * @param {any} args
 * @returns {any}
 */
export function parseArgs(args) {
  if (typeof args !== 'string') return args ?? {};
  const t = args.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return args;
  try {
    return JSON.parse(t);
  } catch {
    return args;
  }
}

/**
 * What a call did, read from its name and arguments, for toolview.js to
 * draw:
 * - `edit`: a file's changes as line diffs (Claude Code's Edit and
 *   MultiEdit, one diff per edit; Write, a new file's lines all added);
 * - `patch`: codex's apply_patch, its files and hunks;
 * - `shell`: a command, where it ran, and why (Bash, codex's shell,
 *   shell_command, exec_command, local_shell);
 * - `plan`: a proposed plan, its Markdown (Claude Code's ExitPlanMode);
 * - `args`: anything else, its arguments as they are.
 * Each has the one-line `gist` its row's summary shows and, when it
 * changes files, the lines it adds and removes. A call whose arguments
 * lack what its kind needs (cut short, say) reads as `args`.
 * @typedef {{kind: 'edit', gist: string, stat: Stat, path: string, diffs: DiffLine[][], note: string}
 *   | {kind: 'patch', gist: string, stat: Stat, files: PatchFile[]}
 *   | {kind: 'shell', gist: string, stat: null, command: string, workdir: string, description: string}
 *   | {kind: 'plan', gist: string, stat: null, plan: string}
 *   | {kind: 'args', gist: string, stat: null, args: any}} Call
 */

/** The names of the shell tools. */
const SHELL_TOOLS = new Set(['Bash', 'shell', 'shell_command', 'exec_command', 'local_shell', 'container.exec']);

/**
 * @param {string} name
 * @param {any} rawArgs
 * @returns {Call}
 */
export function readCall(name, rawArgs) {
  const args = parseArgs(rawArgs);
  const a = args && typeof args === 'object' && !Array.isArray(args) ? args : {};
  const str = (/** @type {any} */ v) => (typeof v === 'string' ? v : '');
  const patch = name === 'apply_patch' || SHELL_TOOLS.has(name) ? patchOf(args) : '';
  const files = patch ? parsePatch(patch) : null;
  if (files && files.length > 0) {
    const stat = counts(files.flatMap((f) => f.hunks.flatMap((h) => h.lines)));
    const gist = files.length === 1 ? files[0].path : `${files.length} files: ${files.map((f) => f.path).join(', ')}`;
    return { kind: 'patch', gist, stat, files };
  }
  const path = str(a.file_path);
  if (path && name === 'Edit' && typeof a.old_string === 'string' && typeof a.new_string === 'string') {
    return editCall(path, [a], a.replace_all === true ? 'every occurrence replaced' : '');
  }
  if (path && name === 'MultiEdit' && Array.isArray(a.edits) && a.edits.every(isEdit)) {
    return editCall(path, a.edits, `${a.edits.length} edits`);
  }
  if (path && name === 'Write' && typeof a.content === 'string') {
    return editCall(path, [{ old_string: '', new_string: a.content }], 'the whole file written');
  }
  if (name === 'ExitPlanMode' && typeof a.plan === 'string' && a.plan.trim()) {
    return { kind: 'plan', gist: firstLine(a.plan.trim().replace(/^#+\s*/, '')), stat: null, plan: a.plan };
  }
  const shell = SHELL_TOOLS.has(name) ? shellOf(a) : null;
  if (shell) return { kind: 'shell', gist: firstLine(shell.command), stat: null, ...shell };
  return { kind: 'args', gist: argsGist(name, args), stat: null, args };
}

/** @param {any} e */
const isEdit = (e) => e && typeof e.old_string === 'string' && typeof e.new_string === 'string';

/**
 * @param {string} path
 * @param {{old_string: string, new_string: string}[]} edits
 * @param {string} note
 * @returns {Call}
 */
function editCall(path, edits, note) {
  const diffs = edits.map((e) => diffText(e.old_string, e.new_string));
  return { kind: 'edit', gist: path, stat: counts(diffs.flat()), path, diffs, note };
}

/**
 * A shell call's command line and working directory: `command` as a
 * string or an argv (codex's `["bash","-lc","npm test"]` read as `npm
 * test`), exec_command's `cmd`, local_shell's `action`.
 * @param {any} a
 * @returns {{command: string, workdir: string, description: string} | null}
 */
function shellOf(a) {
  const src = a.action && typeof a.action === 'object' ? a.action : a;
  const raw = src.command ?? src.cmd;
  let command = '';
  if (typeof raw === 'string') command = raw;
  else if (Array.isArray(raw) && raw.length > 0 && raw.every((x) => typeof x === 'string')) command = shellWords(raw);
  if (!command.trim()) return null;
  const workdir = [src.workdir, src.working_directory, src.cwd].find((v) => typeof v === 'string') ?? '';
  return { command, workdir, description: typeof a.description === 'string' ? a.description : '' };
}

/**
 * The gist of a call that is neither an edit, a patch nor a shell call:
 * Read's path and lines, Grep's and Glob's pattern and where, the task
 * tools' subject or id and what changed, else the first telling argument.
 * @param {string} name
 * @param {any} args
 */
function argsGist(name, args) {
  const a = args && typeof args === 'object' ? args : {};
  const where = (/** @type {string} */ s) => (typeof a.path === 'string' && a.path ? `${s} in ${a.path}` : s);
  switch (name) {
    case 'Read':
      if (typeof a.file_path !== 'string') break;
      if (typeof a.offset === 'number' && typeof a.limit === 'number') return `${a.file_path} · lines ${a.offset}–${a.offset + a.limit - 1}`;
      if (typeof a.offset === 'number') return `${a.file_path} · from line ${a.offset}`;
      if (typeof a.limit === 'number') return `${a.file_path} · first ${a.limit} lines`;
      return a.file_path;
    case 'Grep':
    case 'Glob':
      if (typeof a.pattern !== 'string') break;
      return where(a.glob ? `${a.pattern} (${a.glob})` : a.pattern);
    case 'TaskCreate':
      if (typeof a.subject === 'string') return a.subject;
      break;
    case 'TaskGet':
      if (a.taskId != null) return `#${a.taskId}`;
      break;
    case 'TaskUpdate': {
      if (a.taskId == null) break;
      const changed = Object.keys(a).filter((k) => !['taskId', 'status'].includes(k));
      return [`#${a.taskId}${typeof a.status === 'string' ? ` → ${a.status}` : ''}`, changed.join(', ')].filter(Boolean).join(' · ');
    }
  }
  return gist(args);
}

/**
 * The list a todo tool call carried, in Tack's shape, read by its tool's
 * shape (TODO_TOOLS): `todos` and `content` of todo_write and TodoWrite,
 * `plan` and `step` of update_plan. A status none of Tack's, nor the
 * agent's spelling of one, reads as pending.
 * @param {any} raw
 * @param {ListTool} [shape] todo_write's when not given
 * @returns {import('./api.js').Todo[]}
 */
export function todoArgs(raw, shape = TODO_WRITE) {
  const args = parseArgs(raw);
  const list = args && Array.isArray(args[shape.list]) ? args[shape.list] : [];
  return list.map((/** @type {any} */ t) => {
    let status = t?.status;
    if (shape.statuses && typeof status === 'string' && Object.hasOwn(shape.statuses, status)) status = shape.statuses[status];
    return {
      content: String(t?.[shape.item] ?? ''),
      status: ['pending', 'in_progress', 'completed'].includes(status) ? status : 'pending',
    };
  });
}
