// Package sizedcache is a least-recently-used cache bounded both in how
// many values it holds and in an estimate of the bytes they take, safe for
// concurrent use: the store's appended states and decoded todo lists, and
// the API's encoded answers and session owners, are kept in one each.
package sizedcache

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache holds at most entries values and maxBytes of their sizes; past
// either, the least recently used value is forgotten first. A value larger
// than maxBytes/64 is never kept.
type Cache[K comparable, V any] struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[K, sized[V]]
	bytes    int
	maxBytes int
}

type sized[V any] struct {
	v    V
	size int
}

// New makes a cache of at most entries values (at least 1) and maxBytes.
func New[K comparable, V any](entries, maxBytes int) *Cache[K, V] {
	c := &Cache[K, V]{maxBytes: maxBytes}
	c.lru, _ = simplelru.NewLRU(max(entries, 1), func(_ K, e sized[V]) { c.bytes -= e.size }) // fails only on a size ≤ 0
	return c
}

// Get returns the value kept under k, marking it the most recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(k)
	return e.v, ok
}

// Add keeps v, of the given size, under k in place of what k held, and
// forgets the least recently used values until both bounds hold. A value
// over maxBytes/64 is not kept: k then holds nothing.
func (c *Cache[K, V]) Add(k K, v V, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k)
	if size > c.maxBytes/64 {
		return
	}
	for c.bytes+size > c.maxBytes {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
	c.lru.Add(k, sized[V]{v, size})
	c.bytes += size
}

// Remove forgets what k holds.
func (c *Cache[K, V]) Remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k)
}

// Len is how many values the cache holds, Bytes their sizes' sum.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

func (c *Cache[K, V]) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Keys are the keys the cache holds, oldest first.
func (c *Cache[K, V]) Keys() []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Keys()
}
