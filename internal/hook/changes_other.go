//go:build !linux

package hook

// fileChanges ticks every changeCheck: other systems' file watches are
// not wired up here.
func fileChanges(path string) changes { return newTicks(path) }
