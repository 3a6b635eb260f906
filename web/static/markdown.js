// Agent messages are Markdown: parsed by marked, then sanitized by DOMPurify
// before they touch the page (both vendored under vendor/, see its README).

import { Marked } from './vendor/marked.esm.js';
import DOMPurify from './vendor/purify.es.js';

const marked = new Marked({ gfm: true, breaks: true, async: false });

// Links leave Tack in a new tab and tell the target nothing.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

/**
 * Markdown text as a sanitized fragment, ready to append.
 * @param {string} text
 * @returns {DocumentFragment}
 */
export function markdown(text) {
  const html = /** @type {string} */ (marked.parse(text));
  return DOMPurify.sanitize(html, { RETURN_DOM_FRAGMENT: true, FORBID_TAGS: ['style', 'form', 'input', 'img'] });
}
