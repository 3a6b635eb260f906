//go:build !unix

package importer

import "os"

// openRead opens path to read.
func openRead(path string) (*os.File, error) { return os.Open(path) }
