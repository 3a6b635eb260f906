// Renaming a session from its title in the bar: a button beside the title
// opens a one-line field in its place; Enter (or the Save button) saves it
// through PATCH /sessions/{id}, Escape (or Cancel) puts the title back. A
// title a person gives is final: no later prompt replaces it.

import { APIError, send, sessionPath } from './api.js';
import { el } from './todos.js';

/** The most characters a title may hold (the API's limit). */
const MAX_TITLE = 200;

/**
 * Shows session's title in the bar's title slot and, when the reader may
 * rename it, the affordance to.
 * @param {HTMLElement} slot the bar's [data-title]
 * @param {import('./api.js').Session} session
 * @param {boolean} may whether this reader may rename it (its owner, or an admin, with a write credential)
 * @param {(s: import('./api.js').Session) => void} renamed told the session as renamed
 */
export function showTitle(slot, session, may, renamed) {
  const text = el('span', 'bar-title-text', session.title);
  text.dataset.titleText = '';
  slot.replaceChildren(text);
  if (!may) return;
  const button = el('button', 'bar-rename', 'Rename');
  button.type = 'button';
  button.dataset.rename = '';
  button.setAttribute('aria-label', `Rename session “${session.title}”`);
  slot.append(button);
  button.addEventListener('click', () => edit(slot, session, may, renamed));
}

/**
 * Puts the title's field in the slot, focused with the title selected.
 * @param {HTMLElement} slot
 * @param {import('./api.js').Session} session
 * @param {boolean} may
 * @param {(s: import('./api.js').Session) => void} renamed
 */
function edit(slot, session, may, renamed) {
  const form = el('form', 'bar-rename-form');
  form.dataset.renameForm = '';
  const input = /** @type {HTMLInputElement} */ (el('input', 'bar-rename-input'));
  input.type = 'text';
  input.value = session.title;
  input.maxLength = MAX_TITLE;
  input.required = true;
  input.setAttribute('aria-label', 'Session title');
  const save = el('button', 'bar-button', 'Save');
  save.setAttribute('type', 'submit');
  const cancel = el('button', 'bar-button', 'Cancel');
  cancel.setAttribute('type', 'button');
  const error = el('span', 'bar-rename-error');
  error.setAttribute('role', 'alert');
  form.append(input, save, cancel, error);
  slot.replaceChildren(form);
  input.focus();
  input.select();
  const back = (/** @type {import('./api.js').Session} */ s) => {
    showTitle(slot, s, may, renamed);
    /** @type {HTMLElement|null} */ (slot.querySelector('[data-rename]'))?.focus();
  };
  cancel.addEventListener('click', () => back(session));
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      back(session);
    }
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const title = input.value.trim();
    if (title === '' || title === session.title) {
      back(session);
      return;
    }
    save.toggleAttribute('disabled', true);
    try {
      const s = await send('PATCH', sessionPath(session.id), { title });
      renamed(s);
      back(s);
    } catch (err) {
      save.toggleAttribute('disabled', false);
      error.textContent = err instanceof APIError ? err.message : 'Could not rename the session.';
      input.focus();
    }
  });
}
