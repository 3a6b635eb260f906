//go:build unix

package main

import "syscall"

// raiseDescriptorLimit raises the soft limit of open files to the hard one
// and returns it (0 when it cannot be read): every socket is a descriptor.
// (The Go runtime raises it at start on some systems; this says how far.)
func raiseDescriptorLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return uint64(lim.Cur)
}
