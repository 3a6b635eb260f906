package engine

import (
	"crypto/rand"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/sizedcache"
)

// Copies keeps the todos view of sessions read, for a store that sees
// every write that could change them: SQLite, whose file one process holds
// (its lockFile), and the fast Postgres store for the sessions it holds a
// read lease of (store/postgres/fast), which no other instance can write meanwhile. It is
// the one epoch-guarded copy of the stores. A read answers from its copy;
// an append that changed the session's list, or failed, drops its copy
// (wrote) once it ended, before it answers, as does the loss of a lease. A
// read that goes to the database keeps what it found (fill) only when no
// such drop of the session (nor of another session sharing its stripe of
// epochs) happened while it read (begin), so a copy is never older than
// the last acknowledged write: reads stay as consistent as reading the
// database each time.
type Copies struct {
	lists *sizedcache.Cache[string, projection.Todos]
	seed  maphash.Seed

	mu     sync.Mutex
	epochs [copyStripes]uint64
}

// copyStripes is how many epochs the sessions share (a write of one
// session refuses the fills of the others of its stripe read meanwhile:
// only a copy not kept); copyEntries and copyBytes bound the copies, as the
// decoded lists' cache is bounded.
const (
	copyStripes = 4096
	copyEntries = 16384
	copyBytes   = 32 << 20
)

func NewCopies() *Copies {
	return &Copies{lists: sizedcache.New[string, projection.Todos](copyEntries, copyBytes), seed: maphash.MakeSeed()}
}

func (c *Copies) stripe(id string) int { return int(maphash.String(c.seed, id) % copyStripes) }

// Get is session id's copy.
func (c *Copies) Get(id string) (projection.Todos, bool) { return c.lists.Get(id) }

// Begin is the epoch a read of session id to the database starts at.
func (c *Copies) Begin(id string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epochs[c.stripe(id)]
}

// Fill keeps what a read begun at epoch found, unless an append ended since.
func (c *Copies) Fill(id string, epoch uint64, t projection.Todos) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epochs[c.stripe(id)] == epoch {
		c.lists.Add(id, t, 256+projection.ItemsSize(t.Todos))
	}
}

// Wrote drops session id's copy: an append of it ended, or its lease went.
func (c *Copies) Wrote(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochs[c.stripe(id)]++
	c.lists.Remove(id)
}

// NewID is a fresh opaque id with prefix.
func NewID(prefix string) string { return prefix + strings.ToLower(rand.Text()) }
