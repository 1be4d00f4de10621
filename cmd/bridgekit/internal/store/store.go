// Package store keeps trace sessions in an SQLite database (modernc.org/sqlite:
// pure Go, so the command builds with CGO_ENABLED=0), for `bridgekit trace
// --store`, the inspector and the subcommands that read recorded traffic.
//
// Schema (PRAGMA user_version = 2):
//
//	sessions(id TEXT PRIMARY KEY, started TEXT, ended TEXT, command TEXT  -- JSON array
//	         family TEXT, status INTEGER, signal TEXT, frames INTEGER, problems INTEGER,
//	         writer TEXT,      -- the process writing it: {"host","boot","pid","start"}
//	         unclean INTEGER)  -- 1: ended by a reader, its writer gone (Open)
//	records(session TEXT, seq INTEGER, type TEXT, time TEXT, dir TEXT, kind TEXT,
//	        method TEXT, id TEXT, reply_to INTEGER, latency_us REAL, size INTEGER,
//	        problems INTEGER, record TEXT,  -- the record's JSONL line (package tracelog)
//	        PRIMARY KEY (session, seq))
//
// records holds every record of every session exactly as the JSONL trace
// has it (record), with the members readers filter on copied into columns;
// sessions is a summary kept up to date as records arrive. Times are RFC
// 3339 with nanoseconds, UTC.
//
// A session is live until its end record arrives. When the process writing
// it dies first (a trace killed with SIGKILL), Open finds it: a session
// with no end whose writer no longer runs gets an end record of its own,
// marked unclean, at the time of its last record, with the requests it
// left unanswered (its frames classified again).
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// SchemaVersion is the user_version of the databases this package writes.
const SchemaVersion = 2

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	id TEXT PRIMARY KEY,
	started TEXT NOT NULL,
	ended TEXT,
	command TEXT NOT NULL DEFAULT '[]',
	family TEXT NOT NULL DEFAULT '',
	status INTEGER,
	signal TEXT NOT NULL DEFAULT '',
	frames INTEGER NOT NULL DEFAULT 0,
	problems INTEGER NOT NULL DEFAULT 0,
	writer TEXT NOT NULL DEFAULT '',
	unclean INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS records (
	session TEXT NOT NULL,
	seq INTEGER NOT NULL,
	type TEXT NOT NULL,
	time TEXT NOT NULL,
	dir TEXT NOT NULL DEFAULT '',
	kind TEXT NOT NULL DEFAULT '',
	method TEXT NOT NULL DEFAULT '',
	id TEXT NOT NULL DEFAULT '',
	reply_to INTEGER NOT NULL DEFAULT 0,
	latency_us REAL,
	size INTEGER NOT NULL DEFAULT 0,
	problems INTEGER NOT NULL DEFAULT 0,
	record TEXT NOT NULL,
	PRIMARY KEY (session, seq)
);
CREATE INDEX IF NOT EXISTS records_method ON records (session, method);
CREATE INDEX IF NOT EXISTS records_problems ON records (session, problems) WHERE problems > 0;
`

// ErrSchema is returned for a database written by a newer version.
var ErrSchema = errors.New("store: database schema is newer than this bridgekit")

// DB is a session store.
type DB struct {
	db *sql.DB
}

// Open opens (creating if needed) the store at path.
func Open(ctx context.Context, path string) (*DB, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	s := &DB{db: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	if err := s.endAbandoned(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: ending sessions whose writer is gone: %w", path, err)
	}
	return s, nil
}

func (s *DB) migrate(ctx context.Context) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w (version %d, this one knows %d)", ErrSchema, v, SchemaVersion)
	}
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return err
	}
	if v == 1 {
		// Version 2 knows who writes a session, and which ended unclean.
		for _, col := range []string{"writer TEXT NOT NULL DEFAULT ''", "unclean INTEGER NOT NULL DEFAULT 0"} {
			if _, err := s.db.ExecContext(ctx, "ALTER TABLE sessions ADD COLUMN "+col); err != nil {
				return err
			}
		}
	}
	_, err := s.db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion))
	return err
}

// Close closes the database.
func (s *DB) Close() error { return s.db.Close() }

// Put stores records in one transaction, updating their sessions'
// summaries.
func (s *DB) Put(ctx context.Context, recs []*tracelog.Record) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := put(ctx, tx, recs); err != nil {
		return err
	}
	return tx.Commit()
}

func put(ctx context.Context, tx *sql.Tx, recs []*tracelog.Record) error {
	ins, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO records
		(session, seq, type, time, dir, kind, method, id, reply_to, latency_us, size, problems, record)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, r := range recs {
		line, err := r.Marshal(nil)
		if err != nil {
			return err
		}
		var lat any
		if r.LatencyUS != nil {
			lat = *r.LatencyUS
		}
		if _, err := ins.ExecContext(ctx, r.Session, r.Seq, r.Type, r.Time.UTC().Format(time.RFC3339Nano), string(r.Dir), string(r.Kind),
			r.Method, string(r.ID), r.ReplyTo, lat, r.Size, len(r.Problems), string(line[:len(line)-1])); err != nil {
			return err
		}
		switch r.Type {
		case tracelog.TypeSession:
			cmd, _ := json.Marshal(r.Command)
			_, err = tx.ExecContext(ctx, `INSERT INTO sessions (id, started, command, writer) VALUES (?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET started = excluded.started, command = excluded.command, writer = excluded.writer`,
				r.Session, r.Time.UTC().Format(time.RFC3339Nano), string(cmd), self())
		case tracelog.TypeFrame:
			_, err = tx.ExecContext(ctx, `INSERT INTO sessions (id, started, family, frames, problems) VALUES (?, ?, ?, 1, ?)
				ON CONFLICT (id) DO UPDATE SET frames = frames + 1, problems = problems + excluded.problems,
				family = CASE WHEN excluded.family = '' THEN family ELSE excluded.family END`,
				r.Session, r.Time.UTC().Format(time.RFC3339Nano), string(r.Family), len(r.Problems))
		case tracelog.TypeEnd:
			var status any
			if r.Status != nil {
				status = *r.Status
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO sessions (id, started, ended, status, signal, family, problems, unclean) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET ended = excluded.ended, status = excluded.status, signal = excluded.signal,
				problems = problems + excluded.problems, unclean = excluded.unclean,
				family = CASE WHEN excluded.family = '' THEN family ELSE excluded.family END`,
				r.Session, r.Time.UTC().Format(time.RFC3339Nano), r.Time.UTC().Format(time.RFC3339Nano), status, r.Signal, string(r.Family), len(r.Problems), r.Unclean)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Session summarises one session.
type Session struct {
	ID       string     `json:"id"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	Command  []string   `json:"command"`
	Family   string     `json:"family"`
	Status   *int       `json:"status,omitempty"`
	Signal   string     `json:"signal,omitempty"`
	Frames   int        `json:"frames"`
	Problems int        `json:"problems"`
	// Unclean: the session's writer died before it ended the session
	// (Ended is then its last record's time).
	Unclean bool `json:"unclean,omitempty"`
}

// Sessions lists the sessions, newest first.
func (s *DB) Sessions(ctx context.Context) ([]Session, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, started, ended, command, family, status, signal, frames, problems, unclean
		FROM sessions ORDER BY started DESC, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var ss Session
		var started string
		var ended sql.NullString
		var cmd string
		var status sql.NullInt64
		if err := rows.Scan(&ss.ID, &started, &ended, &cmd, &ss.Family, &status, &ss.Signal, &ss.Frames, &ss.Problems, &ss.Unclean); err != nil {
			return nil, err
		}
		ss.Started, _ = time.Parse(time.RFC3339Nano, started)
		if ended.Valid {
			t, _ := time.Parse(time.RFC3339Nano, ended.String)
			ss.Ended = &t
		}
		if status.Valid {
			v := int(status.Int64)
			ss.Status = &v
		}
		_ = json.Unmarshal([]byte(cmd), &ss.Command)
		out = append(out, ss)
	}
	return out, rows.Err()
}

// Records returns up to limit records of session with seq > after, in
// order (limit <= 0: all).
func (s *DB) Records(ctx context.Context, session string, after int64, limit int) ([]*tracelog.Record, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT record FROM records WHERE session = ? AND seq > ? ORDER BY seq LIMIT ?`, session, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*tracelog.Record
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		var r tracelog.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("store: session %s: %w", session, err)
		}
		out = append(out, &r)
	}
	return out, rows.Err()
}
