//go:build unix

package importer

import (
	"os"
	"syscall"
)

// openRead opens path to read without blocking on the open: a FIFO put
// where a transcript was would otherwise hold the open until a writer came.
func openRead(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
