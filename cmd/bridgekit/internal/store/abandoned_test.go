package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// session writes a session of one request (id 7, never answered) and a
// notification to db, as trace would up to the moment it was killed.
func session(t *testing.T, db *DB, id string, at time.Time) {
	t.Helper()
	req := `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`
	note := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`
	recs := []*tracelog.Record{{Type: tracelog.TypeSession, Session: id, Time: at, Version: tracelog.Version, Command: []string{"agent"}}}
	for i, l := range []struct {
		dir  frames.Direction
		line string
	}{{frames.In, req}, {frames.Out, note}} {
		r := &tracelog.Record{Type: tracelog.TypeFrame, Session: id, Seq: int64(i + 1), Time: at.Add(time.Duration(i+1) * time.Second), Dir: l.dir, Size: len(l.line)}
		r.SetLine([]byte(l.line))
		r.SetFrame(frames.New(frames.ACP).Classify(r.Seq, r.Dir, r.Time, []byte(l.line), false))
		recs = append(recs, r)
	}
	if err := db.Put(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

// deadWriter is the writer of a process that has exited.
func deadWriter(t *testing.T) string {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	w := here()
	w.PID = c.Process.Pid
	w.Start = "1" // a process of that PID now is not it
	b, _ := json.Marshal(w)
	return string(b)
}

func setWriter(t *testing.T, path, id, w string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE sessions SET writer = ? WHERE id = ?`, w, id); err != nil {
		t.Fatal(err)
	}
}

// A session whose writer died is ended, unclean, the next time the store
// is opened, at its last record, with its unanswered request; a session
// whose writer runs stays live; opening again changes nothing more.
func TestAbandonedSessionEndsUnclean(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 6, 13, 0, 0, 0, time.UTC)
	session(t, db, "dead", t0)
	session(t, db, "alive", t0.Add(time.Minute))
	db.Close()
	setWriter(t, path, "dead", deadWriter(t))

	for range 2 {
		db, err = Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := db.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]Session{}
		for _, s := range ss {
			byID[s.ID] = s
		}
		dead, alive := byID["dead"], byID["alive"]
		if !dead.Unclean || dead.Ended == nil || !dead.Ended.Equal(t0.Add(2*time.Second)) || dead.Status != nil || dead.Problems != 1 {
			t.Errorf("dead session: %+v; want unclean, ended at its last record %v, no status, 1 problem", dead, t0.Add(2*time.Second))
		}
		if alive.Unclean || alive.Ended != nil {
			t.Errorf("a session whose writer runs: %+v; want live", alive)
		}
		recs, err := db.Records(ctx, "dead", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		end := recs[len(recs)-1]
		if len(recs) != 3 || end.Type != tracelog.TypeEnd || !end.Unclean || end.Seq != 3 ||
			len(end.Unanswered) != 1 || end.Unanswered[0].ID != "7" || end.Unanswered[0].Method != "session/prompt" ||
			len(end.Problems) != 1 || end.Problems[0].Code != frames.ProblemUnanswered {
			b, _ := json.Marshal(recs)
			t.Errorf("records: %s; want the two frames and an unclean end listing request 7 unanswered", b)
		}
		db.Close()
	}
}

// A store of schema version 1 (no writers) is migrated, and its sessions
// left without an end are ended unclean: no version 1 writer can still
// be writing them once a version 2 one opens the store.
func TestVersion1StoreIsMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	v1 := `CREATE TABLE sessions (id TEXT PRIMARY KEY, started TEXT NOT NULL, ended TEXT, command TEXT NOT NULL DEFAULT '[]',
		family TEXT NOT NULL DEFAULT '', status INTEGER, signal TEXT NOT NULL DEFAULT '', frames INTEGER NOT NULL DEFAULT 0,
		problems INTEGER NOT NULL DEFAULT 0);
	INSERT INTO sessions (id, started, frames) VALUES ('old', '2026-12-01T00:00:00Z', 0);
	PRAGMA user_version = 1;`
	if _, err := raw.Exec(v1); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ss, err := db.Sessions(ctx)
	if err != nil || len(ss) != 1 || !ss[0].Unclean || ss[0].Ended == nil {
		t.Fatalf("sessions %+v, %v; want the old one ended unclean", ss, err)
	}
	var v int
	if err := db.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion {
		t.Errorf("user_version %d, %v", v, err)
	}
}

func TestWriterGone(t *testing.T) {
	if gone(self()) {
		t.Error("this process is taken for gone")
	}
	if !gone(deadWriter(t)) {
		t.Error("an exited process is taken to run")
	}
	w := here()
	w.Host, w.PID = w.Host+"-elsewhere", 1
	b, _ := json.Marshal(w)
	if gone(string(b)) {
		t.Error("a writer on another machine is taken for gone: it cannot be told")
	}
	if _, err := os.Stat("/proc/self/stat"); err == nil && procStart(os.Getpid()) == "" {
		t.Error("no start time for this process")
	}
}
