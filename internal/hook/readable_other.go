//go:build !unix

package hook

import "errors"

// Readable is false where a file's owner is not at hand: the hooks sync
// their transcripts themselves.
func Readable(string) bool { return false }

// ReadKey has no key to give where Readable reads nothing.
func ReadKey() (path, key string, err error) { return "", "", errors.ErrUnsupported }

func readKeyFile(string) (string, error) { return "", errors.ErrUnsupported }
