// The sign-in page: a pasted token, or the code of a one-time sign-in link
// (/login#code=…; after '#', so it never reaches a server log), is traded
// for the sign-in cookie, and the browser goes on to the sessions.

import { APIError, send } from './api.js';

/**
 * POSTs a credential to /login.
 * @param {{token?: string, code?: string}} body
 * @returns {Promise<string>} an error message, or '' when signed in
 */
async function signIn(body) {
  try {
    await send('POST', '/login', body);
    return '';
  } catch (err) {
    if (err instanceof APIError) return err.message;
    throw err;
  }
}

/** @param {string} message */
function showError(message) {
  const el = /** @type {HTMLElement} */ (document.querySelector('[data-error]'));
  el.textContent = message;
  el.hidden = !message;
}

/** Redeems the code of a sign-in link in the URL's fragment, if there is one. */
async function redeem() {
  const code = new URLSearchParams(location.hash.slice(1)).get('code');
  if (!code) return;
  history.replaceState(null, '', '/login'); // the code is spent either way
  const failed = await signIn({ code });
  if (!failed) return location.assign('/');
  showError(`That sign-in link did not work: ${failed}`);
}

async function main() {
  // A link pasted into this tab while it is on /login changes only the
  // fragment: no load, so the code is read when the fragment changes too.
  window.addEventListener('hashchange', () => { redeem(); });
  await redeem();
  const form = /** @type {HTMLFormElement} */ (document.querySelector('[data-login-form]'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const token = /** @type {HTMLInputElement} */ (form.elements.namedItem('token')).value.trim();
    const failed = await signIn({ token });
    if (!failed) return location.assign('/');
    showError(failed);
  });
}

main();
