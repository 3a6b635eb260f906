//go:build !unix

package main

// raiseDescriptorLimit knows no descriptor limit here: sockets are capped
// per principal alone.
func raiseDescriptorLimit() uint64 { return 0 }
