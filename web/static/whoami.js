// Who is signed in, and a way out: fills the [data-whoami] element of the
// bar from GET /me. Under -auth local there is nobody to sign out.

import { me as whoami, toLogin } from './api.js';

async function main() {
  const el = /** @type {HTMLElement|null} */ (document.querySelector('[data-whoami]'));
  if (!el) return;
  const me = await whoami();
  if (!me) return;
  const name = document.createElement('span');
  name.dataset.whoamiName = '';
  name.textContent = me.auth === 'local' ? 'local' : `${me.principal.name} (${me.scope})`;
  el.replaceChildren(name);
  if (me.auth !== 'local' && location.pathname !== '/settings') {
    const settings = document.createElement('a');
    settings.href = '/settings';
    settings.className = 'bar-link';
    settings.textContent = 'Settings';
    el.append(' ', settings);
  }
  if (me.via === 'cookie') {
    const out = document.createElement('button');
    out.type = 'button';
    out.className = 'bar-button';
    out.textContent = 'Sign out';
    out.dataset.signOut = '';
    out.addEventListener('click', async () => {
      await fetch('/logout', { method: 'POST', headers: { 'Content-Type': 'application/json' } });
      toLogin();
    });
    el.append(' ', out);
  }
  el.hidden = false;
}

main();
