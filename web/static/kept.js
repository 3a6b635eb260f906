// Elements kept from one render to the next: a view that re-renders on
// every live message makes anew only what reads differently, and moves the
// rest into place. A browser then lays out and paints what changed, not
// the whole view.

/**
 * Elements by id, each with the key it was made for: what it shows, in a
 * string. A render asks for each element it shows; what it did not ask for
 * is let go when it is done.
 */
export class Kept {
  constructor() {
    /** @type {Map<string, {key: string, el: HTMLElement}>} */
    this.kept = new Map();
    /** @type {Map<string, {key: string, el: HTMLElement}>} */
    this.asked = new Map();
  }

  /**
   * The element kept for id when it was made for key, else a new one.
   * @param {string} id @param {string} key @param {() => HTMLElement} make
   */
  get(id, key, make) {
    const had = this.kept.get(id);
    const el = had?.key === key ? had.el : make();
    this.asked.set(id, { key, el });
    return el;
  }

  /** The render is done: only what it asked for is kept. */
  done() {
    this.kept = this.asked;
    this.asked = new Map();
  }
}

/**
 * Makes parent's children the nodes given, in order, moving only what is
 * out of place: nodes already where they belong are not touched.
 * @param {Element} parent @param {Element[]} nodes
 */
export function place(parent, nodes) {
  const at = parent.children;
  nodes.forEach((n, i) => {
    if (at[i] !== n) parent.insertBefore(n, at[i] ?? null);
  });
  while (at.length > nodes.length) /** @type {Element} */ (parent.lastElementChild).remove();
}
