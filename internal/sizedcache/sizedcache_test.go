package sizedcache

import (
	"fmt"
	"sync"
	"testing"
)

// TestBounds: the cache never holds more than its entries or its bytes,
// forgets the least recently used first, replaces a key's value, and keeps
// no value over a 64th of its bytes.
func TestBounds(t *testing.T) {
	t.Parallel()
	c := New[string, int](10, 6400)
	for i := range 25 {
		c.Add(fmt.Sprint(i), i, 1)
		if c.Len() > 10 {
			t.Fatalf("after %d adds: %d values, bound 10", i+1, c.Len())
		}
	}
	if _, ok := c.Get("14"); ok {
		t.Error("value 14 kept past the entries bound")
	}
	if v, ok := c.Get("15"); !ok || v != 15 {
		t.Errorf("value 15: %v %v, want kept", v, ok)
	}
	// 15 is now the most recently used: the next adds forget 16 first.
	for i := range 8 {
		c.Add(fmt.Sprint("b", i), i, 100)
		if c.Bytes() > 6400 {
			t.Fatalf("%d bytes, bound 6400", c.Bytes())
		}
	}
	if _, ok := c.Get("15"); !ok {
		t.Error("the most recently used value was forgotten")
	}
	if _, ok := c.Get("16"); ok {
		t.Error("the least recently used value was kept")
	}
	for i := range 100 {
		c.Add(fmt.Sprint("c", i), i, 100)
		if c.Bytes() > 6400 || c.Len() > 10 {
			t.Fatalf("%d values, %d bytes, over the bounds", c.Len(), c.Bytes())
		}
	}
	c.Add("c99", -1, 50)
	if v, _ := c.Get("c99"); v != -1 || c.Bytes() != 9*100+50 {
		t.Errorf("replaced value %d, %d bytes; want -1, %d", v, c.Bytes(), 9*100+50)
	}
	c.Add("c99", 0, 101) // over 6400/64
	if _, ok := c.Get("c99"); ok || c.Bytes() != 900 {
		t.Errorf("a value over a 64th of the bytes was kept (%d bytes)", c.Bytes())
	}
}

// TestConcurrent: readers and writers at once (run under -race).
func TestConcurrent(t *testing.T) {
	t.Parallel()
	c := New[int, int](64, 64*64)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				c.Add((g*7+i)%100, i, 1+i%64)
				c.Get(i % 100)
			}
		})
	}
	wg.Wait()
	if c.Len() > 64 || c.Bytes() > 64*64 {
		t.Errorf("%d values, %d bytes, over the bounds", c.Len(), c.Bytes())
	}
}

// TestRemove: a removed value is gone and its bytes given back; removing
// what is not there changes nothing.
func TestRemove(t *testing.T) {
	t.Parallel()
	c := New[string, int](10, 6400)
	c.Add("a", 1, 40)
	c.Add("b", 2, 60)
	c.Remove("a")
	c.Remove("missing")
	if _, ok := c.Get("a"); ok || c.Len() != 1 || c.Bytes() != 60 {
		t.Errorf("after Remove: a kept %v, %d values, %d bytes; want 1 value of 60 bytes", ok, c.Len(), c.Bytes())
	}
}
