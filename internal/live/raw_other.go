//go:build !unix

package live

import (
	"errors"
	"net"
	"syscall"
)

// rawConn is nil where sockets are not non-blocking descriptors a write(2)
// may be tried on: every socket's writes go through its own goroutine.
func rawConn(net.Conn) syscall.RawConn { return nil }

func writeFD(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }
