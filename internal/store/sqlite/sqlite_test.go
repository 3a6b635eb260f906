package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/sqlite"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestSQLiteSecondOpenRefused opens the same file twice: the second is
// refused with a message that says what to do, and the file opens again once
// the first store is closed, with everything it held, migrations and all.
func TestSQLiteSecondOpenRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tack.db")
	first, err := sqlite.Open(ctx, path, projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := first.CreateSession(ctx, store.NewSession{Title: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, first, s.ID, evTurnStart, writeTodos("a", "in_progress"))

	_, err = sqlite.Open(ctx, path, projection.Config{})
	if !errors.Is(err, sqlite.ErrDatabaseInUse) {
		t.Fatalf("second open: got %v, want ErrDatabaseInUse", err)
	}
	t.Log(err)
	for _, want := range []string{path, "another Tack process", "-data-dir", "DATABASE_URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %q", err, want)
		}
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Errorf("no write-ahead log beside the database: %v", err)
	}

	first.Close()
	again, err := sqlite.Open(ctx, path, projection.Config{})
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	defer again.Close()
	got, err := again.Session(ctx, s.ID)
	if err != nil || got.LastSeq != 2 || got.TodoCounts.InProgress != 1 {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
	checkAgainstReplay(t, again, s.ID)
}

// TestSQLiteClosedIsUnavailable: a store that can no longer reach its file
// answers ErrUnavailable, which the API turns into 503.
func TestSQLiteClosedIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tack.db"), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := st.CreateSession(ctx, store.NewSession{Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := st.Ping(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping: got %v, want ErrUnavailable", err)
	}
	if _, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{userMsg("x")}}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Append: got %v, want ErrUnavailable", err)
	}
	if _, err := st.Todos(ctx, s.ID); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Todos: got %v, want ErrUnavailable", err)
	}
}

// TestSQLiteOpenBadPath: a directory that does not exist is a clear error, not a panic.
func TestSQLiteOpenBadPath(t *testing.T) {
	t.Parallel()
	_, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "missing", "tack.db"), projection.Config{})
	if err == nil || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("got %v, want an error about the lock file", err)
	}
}

// TestSQLiteFilesPrivate: the database holds every session, so the files
// SQLite makes (the database, its write-ahead log and shared memory, the
// lock file) are readable by their owner only, whatever the umask allows.
func TestSQLiteFilesPrivate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "tack.db")
	st, err := sqlite.Open(ctx, path, projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, _, err := st.CreateSession(ctx, store.NewSession{Title: "private"})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, s.ID, evTurnStart)
	for _, name := range []string{"tack.db", "tack.db-wal", "tack.db-shm", "tack.db.lock"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group and others", name, perm)
		}
	}
}

// TestSQLiteTodosFromMemory: a list read before is answered from memory —
// a change made to the file behind the store's back is not seen, through
// appends that leave the list's view as it was — until an append that
// changes it drops the copy, whose answer the next read shows.
func TestSQLiteTodosFromMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tack.db")
	st, err := sqlite.Open(ctx, path, projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := newSession(t, st)
	first := todoWriteOK(t, st, s.ID, "one")
	// A turn's start changes the list's view (its plan no longer stands).
	mustAppend(t, st, s.ID, evTurnStart)
	if got, err := st.Todos(ctx, s.ID); err != nil || got.Version != first || got.Standing {
		t.Fatalf("first read: version %d standing %v, %v; want %d, not standing", got.Version, got.Standing, err, first)
	}
	behind, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer behind.Close()
	if _, err := behind.ExecContext(ctx, `UPDATE todo_lists SET version = 99 WHERE session_id = ?`, s.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Todos(ctx, s.ID); err != nil || got.Version != first {
		t.Fatalf("read again: version %d, %v; want the copy's %d", got.Version, err, first)
	}
	// An append that leaves the list's view as it was keeps the copy.
	mustAppend(t, st, s.ID, userMsg("and the colour?"))
	if got, err := st.Todos(ctx, s.ID); err != nil || got.Version != first {
		t.Fatalf("read after an append that left the list: version %d, %v; want the copy's %d", got.Version, err, first)
	}
	mustAppend(t, st, s.ID, projection.NewEvent{Type: projection.TypeTurnEnd, Data: json.RawMessage(`{"reason":"completed"}`)})
	next := todoWriteOK(t, st, s.ID, "two")
	if got, err := st.Todos(ctx, s.ID); err != nil || got.Version != next || got.Todos[0].Content != "two" {
		t.Fatalf("read after an append: version %d %+v, %v; want %d", got.Version, got.Todos, err, next)
	}
}

// TestSQLiteTodosConsistent: writers and readers of one session at once;
// each read after a write was acknowledged sees it, copies and all.
func TestSQLiteTodosConsistent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.SQLite(t, projection.Config{})
	s := newSession(t, st)
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := st.Todos(ctx, s.ID); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range 50 {
				want := todoWriteOK(t, st, s.ID, fmt.Sprintf("w%d-%d", w, i))
				got, err := st.Todos(ctx, s.ID)
				if err != nil || got.Version < want {
					t.Errorf("read after write %d-%d: version %d, %v; want ≥ %d", w, i, got.Version, err, want)
					return
				}
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	wg.Wait()
}

// TestSQLiteStatementsPreparedOnce runs a hook's work (a small append, the
// session and its list read) over and over: the statements it runs are
// prepared once and kept, no more of them the second time round, and an
// import's large batch, whose texts are built for its size, adds none.
func TestSQLiteStatementsPreparedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.SQLite(t, projection.Config{})
	sess, _, err := s.CreateSession(ctx, store.NewSession{Title: "hooks"})
	if err != nil {
		t.Fatal(err)
	}
	round := func() {
		mustAppend(t, s, sess.ID, evTurnStart, userMsg("go"), writeTodos("a", "in_progress"))
		mustAppend(t, s, sess.ID, evTurnEnd)
		if _, err := s.Session(ctx, sess.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.History(ctx, sess.ID, 0, 32); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TodoList(ctx, sess.ID); err != nil {
			t.Fatal(err)
		}
	}
	round() // run unprepared in their transactions, prepared after them
	round()
	w1, r1 := s.KeptStatements()
	if w1 < 5 || r1 < 3 {
		t.Fatalf("kept after two rounds: writer %d, readers %d; want the append's statements and the reads'", w1, r1)
	}
	for range 5 {
		round()
	}
	if w2, r2 := s.KeptStatements(); w2 != w1 || r2 != r1 {
		t.Errorf("kept: writer %d → %d, readers %d → %d; want the same statements again", w1, w2, r1, r2)
	}
	big := []projection.NewEvent{evTurnStart}
	for i := range 100 {
		big = append(big, userMsg(fmt.Sprintf("line %d", i)))
	}
	mustAppend(t, s, sess.ID, big...)
	mustAppend(t, s, sess.ID, evTurnEnd)
	if w3, _ := s.KeptStatements(); w3 != w1 {
		t.Errorf("kept after a batch of %d: writer %d, was %d; want a large batch's texts not kept", len(big), w3, w1)
	}
	checkAgainstReplay(t, s, sess.ID)
}
