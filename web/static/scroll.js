// The conversation's scroller: it follows the newest rows while the reader
// is at the bottom, and loads older pages when the top comes into view.

/**
 * Following: the reader is at the bottom unless they scrolled away. It is
 * decided by the reader's scrolling alone, never by measuring at append
 * time: the plan strip appearing or growing shrinks the scroller without a
 * scroll, and must not count as the reader leaving.
 */
export class Follow {
  /**
   * Starts at the bottom, following.
   * @param {HTMLElement} scroller
   * @param {HTMLButtonElement} newEvents shown while new rows wait below, taking the reader there
   * @param {AbortSignal} signal
   */
  constructor(scroller, newEvents, signal) {
    this.scroller = scroller;
    this.newEvents = newEvents;
    this.following = true;
    // Where the view last scrolled itself: a scroll event landing there is
    // ours (it fires a frame later, maybe after the strip has grown), not the
    // reader's.
    this.ownTop = -1;
    this.toBottom();
    scroller.addEventListener('scroll', () => {
      if (scroller.scrollTop === this.ownTop) return;
      this.ownTop = -1;
      this.following = this.atBottom();
      if (this.following) newEvents.hidden = true;
    }, { passive: true });
    // The scroller changes size (the strip appears or grows, a phone's
    // toolbar hides): a following view stays at the bottom.
    const resized = new ResizeObserver(() => { if (this.following) this.pin(); });
    resized.observe(scroller);
    signal.addEventListener('abort', () => resized.disconnect());
    newEvents.addEventListener('click', () => {
      this.toBottom();
      scroller.focus({ preventScroll: true });
    });
  }

  pin() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.ownTop = this.scroller.scrollTop;
  }

  atBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 40;
  }

  toBottom() {
    this.pin();
    this.following = true;
    this.newEvents.hidden = true;
  }

  /** Rows were appended: a following view stays at the bottom, else the reader is told. */
  appended() {
    if (this.following) this.pin();
    else this.newEvents.hidden = false;
  }
}

/**
 * @typedef {object} OlderOptions
 * @property {HTMLElement} scroller
 * @property {HTMLElement} older shown while a page loads
 * @property {AbortSignal} signal
 * @property {number} firstSeq the first event shown
 * @property {boolean} hasMore whether events before it remain
 * @property {(before: number) => Promise<import('./api.js').HistoryPage>} read the page before a seq
 * @property {(events: import('./api.js').TackEvent[]) => void} prepend shows a page's events above those shown
 * @property {() => void} loaded told after each page is in place
 */

/**
 * Older pages: when the top comes into view, prepend the page before the
 * first shown event and keep the reader's place.
 * A page that fails to load is tried again on the next scroll.
 * @param {OlderOptions} o
 */
export function olderPages(o) {
  const { scroller, older, signal } = o;
  let { firstSeq, hasMore } = o;
  let loading = false;
  const loadOlder = () => loadPage().catch(() => {});
  const loadPage = async () => {
    if (loading || !hasMore || signal.aborted) return;
    loading = true;
    older.hidden = false;
    try {
      const page = await o.read(firstSeq);
      older.hidden = true;
      const fromBottom = scroller.scrollHeight - scroller.scrollTop;
      o.prepend(page.events);
      scroller.scrollTop = scroller.scrollHeight - fromBottom;
      if (page.events.length > 0) firstSeq = page.events[0].seq;
      hasMore = page.hasMore;
      o.loaded();
    } finally {
      loading = false;
      older.hidden = true;
    }
    // Still at the top (a short page, a tall screen): keep going.
    if (hasMore && scroller.scrollTop < 200) loadOlder();
  };
  scroller.addEventListener('scroll', () => {
    if (scroller.scrollTop < 200) loadOlder();
  }, { passive: true });
  if (hasMore && scroller.scrollHeight <= scroller.clientHeight) loadOlder();
}
