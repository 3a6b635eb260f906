package fast

import (
	"bytes"
	"encoding/json"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/sizedcache"
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
}

type decodedCache struct {
	lists *sizedcache.Cache[string, decodedItems]
}

func newDecodedCache() *decodedCache {
	return &decodedCache{sizedcache.New[string, decodedItems](decodedCacheEntries, decodedCacheBytes)}
}

// decode returns the items raw holds, decoding them only when raw is not
// what session id's items were last decoded from.
func (c *decodedCache) decode(id string, raw []byte) ([]projection.Item, error) {
	if d, ok := c.lists.Get(id); ok && bytes.Equal(d.raw, raw) {
		return d.items, nil
	}
	var items []projection.Item
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	c.lists.Add(id, decodedItems{raw: bytes.Clone(raw), items: items}, 256+len(raw)+projection.ItemsSize(items))
	return items, nil
}
