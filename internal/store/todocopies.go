package store

import (
	"hash/maphash"
	"sync"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/sizedcache"
)

// todoCopies keeps the todos view of each session read, for a store that
// sees every write of its database: SQLite, whose file one process holds
// (lockFile). A read answers from its copy; an append that changed the
// session's list, or failed, drops its copy once it ended, before it
// answers. A read that goes to the database
// keeps what it found only when no such append of the session (nor of
// another session sharing its stripe of epochs) ended while it read, so a copy is
// never older than the last acknowledged write: reads stay as consistent
// as reading the database each time.
type todoCopies struct {
	lists *sizedcache.Cache[string, projection.Todos]
	seed  maphash.Seed

	mu     sync.Mutex
	epochs [copyStripes]uint64
}

// copyStripes is how many epochs the sessions share; copyEntries and
// copyBytes bound the copies, as the decoded lists' cache is bounded.
const (
	copyStripes = 256
	copyEntries = 16384
	copyBytes   = 32 << 20
)

func newTodoCopies() *todoCopies {
	return &todoCopies{lists: sizedcache.New[string, projection.Todos](copyEntries, copyBytes), seed: maphash.MakeSeed()}
}

func (c *todoCopies) stripe(id string) int { return int(maphash.String(c.seed, id) % copyStripes) }

// get is session id's copy.
func (c *todoCopies) get(id string) (projection.Todos, bool) { return c.lists.Get(id) }

// begin is the epoch a read of session id to the database starts at.
func (c *todoCopies) begin(id string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epochs[c.stripe(id)]
}

// fill keeps what a read begun at epoch found, unless an append ended since.
func (c *todoCopies) fill(id string, epoch uint64, t projection.Todos) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epochs[c.stripe(id)] == epoch {
		c.lists.Add(id, t, 256+projection.ItemsSize(t.Todos))
	}
}

// wrote drops session id's copy: an append of it ended.
func (c *todoCopies) wrote(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochs[c.stripe(id)]++
	c.lists.Remove(id)
}
