// Lines the agent's harness wrote into the user role (a background task's
// notice, a slash command, an interruption, the IDE's selection): the model
// saw them, no person typed them. Each reads as one quiet label, its text
// kept to expand; pure, no DOM.

/**
 * @typedef {'task-notification'|'command'|'interrupted'|'ide-context'|
 *   'compact-summary'|'context'|'other'} Kind
 */

/** The text between <tag> and </tag>, trimmed; '' when absent. @param {string} text @param {string} tag */
function tagged(text, tag) {
  const m = text.match(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`));
  return m ? m[1].trim() : '';
}

/** @param {string} s */
const oneLine = (s) => s.replace(/\s+/g, ' ').trim();

/** @param {string} p the last part of a path */
const base = (p) => p.split(/[\\/]/).filter(Boolean).pop() ?? p;

/**
 * A harness line's label: "Background task b6fdbf0 failed (exit 137)",
 * "/compact", "Interrupted by you", "IDE selection · main.go".
 * @param {Kind|string} kind
 * @param {string} text
 * @returns {string}
 */
export function harnessLabel(kind, text) {
  const t = String(text ?? '');
  switch (kind) {
    case 'task-notification': {
      const id = tagged(t, 'task-id');
      const status = tagged(t, 'status');
      const exit = tagged(t, 'summary').match(/exit code (\d+)/);
      if (!id && !status) return 'Background task notice';
      return oneLine(`Background task ${id} ${status}${exit ? ` (exit ${exit[1]})` : ''}`);
    }
    case 'command': {
      const name = tagged(t, 'command-name') || (tagged(t, 'command-message') ? `/${tagged(t, 'command-message')}` : '');
      if (name) return oneLine(`${name} ${tagged(t, 'command-args')}`);
      const bash = tagged(t, 'bash-input');
      if (bash) return oneLine(`! ${bash}`);
      if (/<(local-command-stdout|bash-stdout|bash-stderr|local-command-stderr)>/.test(t)) return 'Command output';
      return 'Command';
    }
    case 'interrupted':
      return /for tool use/.test(t) ? 'Interrupted by you during a tool call' : 'Interrupted by you';
    case 'ide-context': {
      const path = t.match(/(?:opened the file|from) (\S+)/);
      const what = /<ide_selection>|selected/.test(t) ? 'IDE selection' : 'Opened in the IDE';
      return path ? `${what} · ${base(path[1].replace(/[:.,]$/, ''))}` : what;
    }
    case 'compact-summary':
      return 'Summary of the conversation so far';
    case 'context': {
      if (/<environment_context>/.test(t)) return 'Environment context';
      if (/<user_instructions>/.test(t)) return 'Instructions for the agent';
      if (/<system-reminder>/.test(t)) return 'Reminder to the agent';
      return 'Context for the agent';
    }
    default:
      return 'Harness message';
  }
}

/**
 * Whether the line's text says more than its label, so the row expands to it.
 * @param {Kind|string} kind @param {string} text
 */
export function harnessHasMore(kind, text) {
  return kind !== 'interrupted' && oneLine(String(text ?? '')) !== harnessLabel(kind, text);
}

/** The heading codex's IDE extension puts before the person's request, after the IDE's context. */
const CODEX_REQUEST = '## My request for Codex:';

/**
 * A prompt split into what the person asked and the context their IDE put
 * before it (codex's IDE extension: "# Context from my IDE setup: …", then
 * "## My request for Codex:" and the request); context is '' for a plain
 * prompt.
 * @param {string} text
 * @returns {{context: string, request: string}}
 */
export function promptParts(text) {
  const i = text.indexOf(CODEX_REQUEST);
  if (i < 0) return { context: '', request: text };
  return { context: text.slice(0, i).trim(), request: text.slice(i + CODEX_REQUEST.length).trim() };
}

/** Harness lines that are context for the model, not something the agent says. */
const QUIET_KINDS = new Set(['ide-context', 'context', 'compact-summary', 'command', 'interrupted']);

/**
 * What an event says to the agent's person, or null when it says nothing:
 * the agent's text (Markdown), or a harness line that tells of something
 * (a background task's notice) as its label. The session's "waiting for
 * you" banner and the board's overview show the latest.
 * @param {{type: string, data?: any}} ev
 * @returns {{text: string, markdown: boolean}|null}
 */
export function saidBy(ev) {
  const d = ev.data ?? {};
  if (ev.type === 'message/assistant' && d.text) return { text: d.text, markdown: true };
  if (ev.type === 'message/user' && d.source === 'harness' && !QUIET_KINDS.has(d.kind)) {
    return { text: d.kind === 'other' ? String(d.text ?? '').trim() : harnessLabel(d.kind, d.text ?? ''), markdown: false };
  }
  return null;
}
