package store

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/tack-dev/tack/internal/projection"
)

// The decoded-items cache: each Postgres store keeps, per session whose list
// it read, the items it decoded beside the stored bytes they came from. A
// read still reads the row every time; only the JSON decode is spared, when
// the row's bytes are the very bytes decoded last time, so a read sees what
// decoding would. The items are shared between readers, which only read them.

// decodedCacheEntries and decodedCacheBytes bound the cache (the bytes an
// estimate of the stored and the decoded items); past either, the least
// recently read session is forgotten first. A list larger than
// decodedCacheBytes/64 is not kept.
const (
	decodedCacheEntries = 16384
	decodedCacheBytes   = 32 << 20
)

type decodedItems struct {
	raw   []byte
	items []projection.Item
	size  int
}

type decodedCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[string, decodedItems]
	bytes int
}

func newDecodedCache() *decodedCache {
	c := &decodedCache{}
	c.lru, _ = simplelru.NewLRU(decodedCacheEntries, func(_ string, d decodedItems) { c.bytes -= d.size }) // fails only on a size ≤ 0
	return c
}

// decode returns the items raw holds, decoding them only when raw is not
// what session id's items were last decoded from.
func (c *decodedCache) decode(id string, raw []byte) ([]projection.Item, error) {
	c.mu.Lock()
	d, ok := c.lru.Get(id)
	c.mu.Unlock()
	if ok && bytes.Equal(d.raw, raw) {
		return d.items, nil
	}
	var items []projection.Item
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	d = decodedItems{raw: bytes.Clone(raw), items: items, size: 256 + len(raw) + projection.ItemsSize(items)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(id)
	if d.size > decodedCacheBytes/64 {
		return items, nil
	}
	for c.bytes+d.size > decodedCacheBytes {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
	c.lru.Add(id, d)
	c.bytes += d.size
	return items, nil
}
