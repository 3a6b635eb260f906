// Command tack-hook-local is an agent's command hook for a Tack server on
// this machine: the quick path of package front (the payload alone,
// posted on one loopback connection, for a server that reads the agent's
// transcripts itself), in a binary that links neither net/http nor TLS,
// whose initialisation costs a process that lives a few milliseconds more
// than its work. What the quick path does not cover (a first hook, before
// the server has said it reads this user's transcripts; a SessionStart; a
// server that no longer reads them) it hands to tack-hook, or `tack hook`,
// in its own folder, with the same arguments and the payload. `tack
// connect` installs it for a server on this machine when it lies beside
// tack. It takes the flags and variables of `tack hook`.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/tack-dev/tack/internal/hook/front"
)

func main() {
	err := front.Run(os.Args[1:], os.Getenv, front.StateDir(), os.Stdin, os.Stdout, full)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "tack-hook-local:", err)
		os.Exit(2)
	}
}

// full runs the full hook beside this binary: tack-hook, or tack's `tack
// hook`, with this hook's arguments and the payload.
func full(payload []byte) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir := filepath.Dir(self)
	ext := filepath.Ext(self)
	var cmd *exec.Cmd
	if hook := filepath.Join(dir, "tack-hook"+ext); executable(hook) {
		cmd = exec.Command(hook, os.Args[1:]...)
	} else if tack := filepath.Join(dir, "tack"+ext); executable(tack) {
		cmd = exec.Command(tack, append([]string{"hook"}, os.Args[1:]...)...)
	} else {
		return fmt.Errorf("neither tack-hook nor tack in %s", dir)
	}
	cmd.Stdin = bytes.NewReader(payload)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

func executable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}
