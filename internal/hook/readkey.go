//go:build unix

package hook

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// keyBytes is the length of the key, in bytes before its hex encoding.
const keyBytes = 32

// ReadKey is the key of this user's servers for the transcripts they read
// (KeyHeader) and the file that holds it, readable by the user alone:
// <cache>/tack/reads.key, made on first use. Every server of the user
// shares it.
func ReadKey() (path, key string, err error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", "", err
	}
	dir = filepath.Join(dir, "tack")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, "reads.key")
	if key, err := readKeyFile(path); err == nil {
		return path, key, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	// Written whole under another name, then linked: a server that starts
	// at the same moment reads one key or the other's, never half of one.
	raw := make([]byte, keyBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	tmp, err := os.CreateTemp(dir, "reads.key.*")
	if err != nil {
		return "", "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(raw))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", "", err
	}
	key, err = readKeyFile(path)
	return path, key, err
}

// readKeyFile reads a key written by ReadKey: a regular file, of this
// user alone (mode 0600), holding the key's hex.
func readKeyFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o077 != 0 || !ownedBy(info, uint32(os.Geteuid())) {
		return "", errors.New(path + ": not a key of this user alone (a regular file, mode 0600)")
	}
	raw, err := io.ReadAll(io.LimitReader(f, 2*keyBytes+1))
	if err != nil {
		return "", err
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) != 2*keyBytes {
		return "", errors.New(path + ": not a key")
	}
	if _, err := hex.Decode(make([]byte, keyBytes), raw); err != nil {
		return "", errors.New(path + ": not a key")
	}
	return string(raw), nil
}
