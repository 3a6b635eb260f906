// The settings page (/settings): one's tokens (make one, revoke one, when
// each was last used), one's browser sign-ins (end one), and for an admin
// every principal. Under -auth local there is nothing to manage.

import { get, me, send, toLogin } from './api.js';
import { ago, timeEl } from './time.js';
import { el } from './todos.js';

/** @param {string} sel */
const $ = (sel) => /** @type {HTMLElement} */ (document.querySelector(sel));

/** @param {unknown} err */
const fail = (err) => {
  const box = $('[data-error]');
  box.textContent = err instanceof Error ? err.message : String(err);
  box.hidden = false;
};

/** A time cell: "5 min ago", the full date as title; "—" for none. @param {string|null|undefined} iso */
const when = (iso) => {
  const td = el('td', '');
  td.append(iso ? timeEl(iso, ago(iso)) : '—');
  return td;
};

/** @param {string} label @param {() => Promise<void>} act */
const action = (label, act) => {
  const td = el('td', '');
  const b = /** @type {HTMLButtonElement} */ (el('button', 'bar-button', label));
  b.type = 'button';
  b.addEventListener('click', () => {
    b.disabled = true;
    act().catch(fail).finally(() => { b.disabled = false; });
  });
  td.append(b);
  return td;
};

/** @param {string} sel @param {HTMLElement[]} rows */
const fill = (sel, rows) => /** @type {HTMLElement} */ ($(sel).querySelector('tbody')).replaceChildren(...rows);

async function showTokens() {
  const { tokens } = await get('/tokens');
  fill('[data-tokens]', tokens.filter((/** @type {any} */ t) => !t.revokedAt).map((/** @type {any} */ t) => {
    const tr = el('tr', '');
    tr.dataset.tokenId = t.id;
    tr.append(el('td', '', t.name || '(no name)'), el('td', '', t.scope), when(t.createdAt), when(t.lastUsedAt),
      action(`Revoke`, async () => { await send('DELETE', `/tokens/${encodeURIComponent(t.id)}`); await showTokens(); }));
    /** @type {HTMLButtonElement} */ (tr.querySelector('button')).setAttribute('aria-label', `Revoke ${t.name || t.id}`);
    return tr;
  }));
}

async function showSignIns() {
  const { signIns } = await get('/me/sign-ins');
  fill('[data-signins]', signIns.map((/** @type {any} */ s) => {
    const tr = el('tr', '');
    tr.dataset.signInId = s.id;
    const made = when(s.createdAt);
    if (s.current) made.append(' (this browser)');
    tr.append(made, el('td', '', s.scope), when(s.expiresAt),
      action(s.current ? 'Sign out' : 'End', async () => {
        await send('DELETE', `/me/sign-ins/${encodeURIComponent(s.id)}`);
        if (s.current) toLogin();
        else await showSignIns();
      }));
    return tr;
  }));
}

async function showPrincipals() {
  const { principals } = await get('/principals');
  fill('[data-principals]', principals.map((/** @type {any} */ p) => {
    const tr = el('tr', '');
    tr.append(el('td', '', p.name), when(p.createdAt), el('td', '', p.admin ? 'admin' : ''));
    return tr;
  }));
}

async function main() {
  const who = await me();
  if (!who) {
    toLogin(); // not signed in
    return;
  }
  if (who.auth === 'local') {
    $('[data-settings-local]').hidden = false;
    return;
  }
  $('[data-tokens-section]').hidden = false;
  $('[data-signins-section]').hidden = false;
  const form = /** @type {HTMLFormElement} */ ($('[data-token-form]'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const name = /** @type {HTMLInputElement} */ ($('[data-token-name]'));
    const scope = /** @type {HTMLSelectElement} */ ($('[data-token-scope]'));
    send('POST', '/tokens', { name: name.value.trim(), scope: scope.value }).then(async (made) => {
      const secret = $('[data-token-secret]');
      // A token made here is a credential of its own: it outlives this
      // sign-in, and the token this browser signed in with, when either
      // ends. Say so where it is shown.
      const outlives = el('span', '',
        ' It stays valid after you sign out, and after the token you signed in with is revoked: revoke it here when it is done with.');
      outlives.dataset.tokenOutlives = '';
      secret.replaceChildren('Your new token, shown this once: ', el('code', '', made.token), outlives);
      secret.hidden = false;
      name.value = '';
      await showTokens();
    }, fail);
  });
  const shows = [showTokens(), showSignIns()];
  if (who.principal.admin) {
    $('[data-principals-section]').hidden = false;
    shows.push(showPrincipals());
  }
  await Promise.all(shows);
}

main().catch(fail);
