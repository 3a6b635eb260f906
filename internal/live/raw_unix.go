//go:build unix

package live

import (
	"net"
	"syscall"
)

// rawConn is conn's descriptor, for the hub writers' non-blocking writes
// (see corkWriter.tryFlushLocked); nil when conn has none (TLS).
func rawConn(conn net.Conn) syscall.RawConn {
	if sc, ok := conn.(syscall.Conn); ok {
		raw, _ := sc.SyscallConn()
		return raw
	}
	return nil
}

// writeFD is one write(2) to a non-blocking descriptor.
func writeFD(fd uintptr, p []byte) (int, error) { return syscall.Write(int(fd), p) }
