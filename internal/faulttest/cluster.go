// Package faulttest runs Tack as it is deployed — several server processes
// sharing one Postgres — on a Postgres cluster of its own, and breaks things
// under it: processes killed or stopped mid-write, the database restarted,
// its backends terminated, the network stalled. The suite is in
// faults_test.go; this file starts and stops the parts.
package faulttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/eventually"
)

// PGBin is where Debian's PostgreSQL 15 keeps initdb and pg_ctl.
const PGBin = "/usr/lib/postgresql/15/bin"

// Cluster is a throwaway Postgres cluster in a temporary directory, on a
// free port of 127.0.0.1, so the suite may restart it at will without
// touching any Postgres that others use.
type Cluster struct {
	t    testing.TB
	dir  string
	port int
	// runAs is the user that owns the cluster when the test runs as root
	// (Postgres refuses to run as root); "" runs the commands directly.
	runAs string
	// stopped is set once Kill has stopped the cluster for good.
	stopped bool
}

// StartCluster initdbs and starts a cluster, removed when the test ends.
// Without initdb the test is skipped, but under CI=true it fails: CI must
// run the suite.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	if _, err := os.Stat(filepath.Join(PGBin, "initdb")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("initdb is missing (%v); the fault suite needs PostgreSQL 15's binaries in %s", err, PGBin)
		}
		t.Skipf("initdb is missing (%v): skipping the fault suite", err)
	}
	c := &Cluster{t: t, port: FreePort(t)}
	dir, err := os.MkdirTemp("", "tack-faults-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user to own the cluster: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.runAs = "postgres"
	}
	c.pg("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	// fsync=off: the faults are process crashes, not power losses, so what
	// Postgres has written survives in the page cache either way, and the
	// machine's disk is spared.
	c.configure()
	c.start()
	return c
}

// configure appends the cluster's own settings to its postgresql.conf.
func (c *Cluster) configure() {
	t := c.t
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n"+
		"fsync = off\nshared_buffers = 32MB\nmax_connections = 100\n", c.port, c.dir)
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// start starts the cluster, stopped (immediately) when the test ends.
func (c *Cluster) start() {
	t := c.t
	c.pg("pg_ctl", "-D", c.data(), "-l", c.logFile(), "-w", "-t", "60", "start")
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(c.logFile()); err == nil {
				t.Logf("postgres log (tail):\n%s", tail(b, 4000))
				// A deadlock's report names every statement of its cycle.
				lines := bytes.Split(b, []byte("\n"))
				for n, l := range lines {
					if bytes.Contains(l, []byte("deadlock detected")) {
						t.Logf("postgres deadlock:\n%s", bytes.Join(lines[n:min(n+12, len(lines))], []byte("\n")))
					}
				}
			}
		}
		if c.stopped {
			return
		}
		c.pg("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
	})
}

// Standby makes a streaming standby of c with pg_basebackup, named name
// (its application_name, which synchronous_standby_names may list), on a
// port of its own, and starts it.
func (c *Cluster) Standby(name string) *Cluster {
	t := c.t
	t.Helper()
	s := &Cluster{t: t, port: FreePort(t), runAs: c.runAs}
	dir, err := os.MkdirTemp("", "tack-standby-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if c.runAs != "" {
		u, _ := user.Lookup(c.runAs)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	s.pg("pg_basebackup", "-D", s.data(), "-R", "-X", "stream", "--no-sync",
		"-d", fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", c.port, name))
	s.configure()
	s.start()
	return s
}

// Exec runs one statement on the cluster's postgres database.
func (c *Cluster) Exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.URL(c.Addr()))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// Kill stops the cluster the hard way (pg_ctl stop -m immediate), as a
// crashed host would: it does not come back.
func (c *Cluster) Kill() {
	c.pg("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
	c.stopped = true
}

// Promote makes a standby the primary and waits until it takes writes.
func (c *Cluster) Promote() {
	c.pg("pg_ctl", "-D", c.data(), "-w", "-t", "60", "promote")
}

func (c *Cluster) data() string    { return filepath.Join(c.dir, "data") }
func (c *Cluster) logFile() string { return filepath.Join(c.dir, "postgres.log") }

// Addr is the cluster's host:port.
func (c *Cluster) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)) }

// URL is a database URL of the cluster's postgres database at addr (the
// cluster's own address, or a proxy's in front of it).
func (c *Cluster) URL(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable"
}

// RestartImmediate restarts Postgres the hard way (pg_ctl restart -m
// immediate: every backend killed, crash recovery on start) and waits
// until it accepts connections again.
func (c *Cluster) RestartImmediate() {
	c.pg("pg_ctl", "-D", c.data(), "-l", c.logFile(), "-m", "immediate", "-w", "-t", "60", "restart")
}

// TerminateBackends ends every client backend but the caller's with
// pg_terminate_backend and reports how many it ended.
func (c *Cluster) TerminateBackends(ctx context.Context) (int, error) {
	conn, err := pgx.Connect(ctx, c.URL(c.Addr()))
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n)
	return n, err
}

// pg runs one of Postgres's programs as the cluster's owner.
func (c *Cluster) pg(name string, args ...string) {
	c.t.Helper()
	bin := filepath.Join(PGBin, name)
	cmd := exec.Command(bin, args...)
	if c.runAs != "" {
		cmd = exec.Command(runuser(), append([]string{"-u", c.runAs, "--", bin}, args...)...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// runuser finds util-linux's runuser: on the PATH, or in the sbin folders
// that a root shell has on its PATH but a bare environment may not.
func runuser() string {
	if p, err := exec.LookPath("runuser"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/runuser", "/sbin/runuser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "runuser"
}

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// BuildServer builds cmd/server into a temporary directory and returns the
// binary's path.
func BuildServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tack-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/tack-dev/tack/cmd/server")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/server: %v\n%s", err, out)
	}
	return bin
}

// Instance is one Tack server process, restartable on the same address.
type Instance struct {
	t    testing.TB
	bin  string
	env  []string
	Addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error
	log  *bytes.Buffer
}

// NewInstance returns an instance of bin that will listen on a free port
// with env added to the test's environment. Start starts it.
func NewInstance(t testing.TB, bin string, env ...string) *Instance {
	i := &Instance{t: t, bin: bin, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t))), log: &bytes.Buffer{}}
	i.env = append(append(os.Environ(), env...), "TACK_ADDR="+i.Addr)
	t.Cleanup(func() {
		i.Kill()
		if t.Failed() {
			t.Logf("instance %s log (tail):\n%s", i.Addr, tail(i.Log(), 4000))
			// Every error line, which the tail may have passed.
			for _, l := range bytes.Split(i.Log(), []byte("\n")) {
				if bytes.Contains(l, []byte("level=ERROR")) {
					t.Logf("instance %s: %s", i.Addr, l)
				}
			}
		}
	})
	return i
}

// Start starts the process and waits until it answers /readyz with 200.
func (i *Instance) Start() {
	i.t.Helper()
	i.mu.Lock()
	cmd := exec.Command(i.bin)
	cmd.Env = i.env
	w := &lockedWriter{mu: &i.mu, b: i.log}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		i.mu.Unlock()
		i.t.Fatalf("start %s: %v", i.bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	i.cmd, i.done = cmd, done
	i.mu.Unlock()

	client := &http.Client{Timeout: time.Second}
	var exited error
	ready := eventually.Within(30*time.Second, func() bool {
		select {
		case err := <-done:
			exited = fmt.Errorf("exited: %v", err)
			return true
		default:
		}
		resp, err := client.Get("http://" + i.Addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	switch {
	case exited != nil:
		i.t.Fatalf("instance %s on start: %v\n%s", i.Addr, exited, tail(i.Log(), 4000))
	case !ready:
		i.t.Fatalf("instance %s not ready after 30s\n%s", i.Addr, tail(i.Log(), 4000))
	}
}

// Kill ends the process with SIGKILL (kill -9) and waits for it.
func (i *Instance) Kill() { _ = i.signal(syscall.SIGKILL) }

// Term ends the process with SIGTERM, a graceful shutdown, and returns its
// exit error (nil for a clean exit).
func (i *Instance) Term() error { return i.signal(syscall.SIGTERM) }

func (i *Instance) signal(sig syscall.Signal) error {
	i.mu.Lock()
	cmd, done := i.cmd, i.done
	i.cmd = nil
	i.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("did not exit within 30s of " + sig.String())
	}
}

// Log is everything the process has written so far.
func (i *Instance) Log() []byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	return bytes.Clone(i.log.Bytes())
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
