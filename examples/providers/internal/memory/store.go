package memory

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/bridgekit/bridgekit/examples/providers/internal/tokenize"
)

// Options configures a Store. The zero value is usable.
type Options struct {
	// LockTimeout bounds the wait for the database file's lock, held by
	// any other process that has it open (default 5s); then Open fails
	// with ErrLocked.
	LockTimeout time.Duration
	// Clock gives the time of requests without one (default time.Now).
	Clock func() time.Time
	// NewID makes record ids (default "mem-" and a random UUID v4).
	NewID func() string
}

// Rules are the constraints of one space, from its declaration.
type Rules struct {
	// AppendOnly refuses update, delete and archive, and upserts of
	// existing records, with ErrConstraintViolation.
	AppendOnly bool
	// Capacity, when positive, is the most live records a scope may hold;
	// a create beyond it fails with ErrCapacityExceeded.
	Capacity int
	// Retention, when positive, sets new records' expires_at to their
	// creation time plus Retention; expired records are no longer read,
	// counted or updated.
	Retention time.Duration
}

// Route names a space of a package version.
type Route struct {
	Package, PackageVersion, Space string
}

// Store is a memory store on a bbolt database file. Every write is one
// transaction, synced to disk before the call returns: what a call
// reported written survives a crash or kill of the process. Its methods
// are safe for concurrent use; writes are serialised, reads run in
// parallel with them.
type Store struct {
	db    *bolt.DB
	opt   Options
	mu    sync.RWMutex
	rules map[Route]Rules
}

var (
	bucketMeta     = []byte("meta")
	bucketRecords  = []byte("records")  // id -> Record JSON
	bucketIndex    = []byte("index")    // scope key + id -> nothing
	bucketOrdinals = []byte("ordinals") // scope key -> last ordinal (uint64, big endian)
	bucketStates   = []byte("states")   // state key -> operation state JSON
	keyFormat      = []byte("format")
)

// storeFormat is written into new databases and checked on open.
const storeFormat = "bridgekit-memory-1"

// Open opens (creating if needed) the store at path.
func Open(path string, opt Options) (*Store, error) {
	if opt.LockTimeout == 0 {
		opt.LockTimeout = 5 * time.Second
	}
	if opt.Clock == nil {
		opt.Clock = time.Now
	}
	if opt.NewID == nil {
		opt.NewID = newUUID
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opt.LockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	}
	if errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrVersionMismatch) || errors.Is(err, bolterrors.ErrChecksum) {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		switch f := meta.Get(keyFormat); {
		case f == nil && tx.Bucket(bucketRecords) == nil:
			if err := meta.Put(keyFormat, []byte(storeFormat)); err != nil {
				return err
			}
		case string(f) != storeFormat:
			return fmt.Errorf("%w: format %q, want %q", ErrCorrupt, f, storeFormat)
		}
		for _, b := range [][]byte{bucketRecords, bucketIndex, bucketOrdinals, bucketStates} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, opt: opt, rules: map[Route]Rules{}}, nil
}

// Close closes the database; later calls fail with ErrClosed.
func (s *Store) Close() error { return s.db.Close() }

// Path returns the database file's path.
func (s *Store) Path() string { return s.db.Path() }

// Check runs bbolt's consistency check over the whole file (every page
// reachable once, freelist coherent) and verifies every record decodes
// and is indexed; the error matches ErrCorrupt.
func (s *Store) Check(ctx context.Context) error {
	return s.view(ctx, func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // drained: the checker blocks until read
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, first)
		}
		idx := tx.Bucket(bucketIndex)
		return tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil || r.ID != string(k) {
				return fmt.Errorf("%w: record %q: %v", ErrCorrupt, k, err)
			}
			if idx.Get(indexKey(route(r.Package, r.PackageVersion, r.Space), r.ScopeJSON, r.ID)) == nil {
				return fmt.Errorf("%w: record %q not indexed", ErrCorrupt, k)
			}
			return nil
		})
	})
}

// Configure sets the rules of spaces (replacing those set before); spaces
// not named have none.
func (s *Store) Configure(rules map[Route]Rules) {
	m := make(map[Route]Rules, len(rules))
	for k, v := range rules {
		m[k] = v
	}
	s.mu.Lock()
	s.rules = m
	s.mu.Unlock()
}

func (s *Store) rulesFor(r Route) Rules {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rules[r]
}

// Descriptor advertises what the store supports as configured: capacity
// only when a configured space has one.
func (s *Store) Descriptor() Descriptor {
	s.mu.RLock()
	capacity := false
	for _, r := range s.rules {
		capacity = capacity || r.Capacity > 0
	}
	s.mu.RUnlock()
	return Descriptor{
		SpaceModels:         []string{string(Document), string(Collection), string(Sequence)},
		RetrievalModes:      []string{string(ModeKey), string(ModeFilter), string(ModeChronological), string(ModeFullText)},
		RetentionActions:    []string{string(Delete), string(Archive)},
		Constraints:         []string{"append_only"},
		Capacity:            capacity,
		DurableTriggerState: true,
		AtomicBatches:       true,
	}
}

func (s *Store) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return closedErr(s.db.View(fn))
}

func (s *Store) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return closedErr(s.db.Update(fn))
}

func closedErr(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// Read returns the live records of a scope that the request's mode
// selects, ordered by ordinal (records without one last), then creation
// time, then id.
func (s *Store) Read(ctx context.Context, req ReadRequest) ([]Record, error) {
	if err := checkRoute(req.Package, req.PackageVersion, req.Space); err != nil {
		return nil, err
	}
	now, _, err := s.now(req.Now)
	if err != nil {
		return nil, err
	}
	var match func(*Record, any) bool
	switch req.Mode {
	case ModeKey:
		if req.RecordID == "" {
			return nil, fail(CodeContractViolation, "key read without record_id")
		}
		match = func(r *Record, _ any) bool { return r.ID == req.RecordID }
	case ModeFilter:
		filter := make(map[string]any, len(req.Filter))
		for path, raw := range req.Filter {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fail(CodeContractViolation, "filter %q: %v", path, err)
			}
			filter[path] = v
		}
		match = func(_ *Record, content any) bool {
			for path, want := range filter {
				if !matchPath(content, strings.Split(path, "."), want) {
					return false
				}
			}
			return true
		}
	case ModeChronological:
	case ModeFullText:
		terms := tokenize.Tokens(req.Query, tokenize.Search)
		if len(terms) > 0 {
			match = func(_ *Record, content any) bool { return hasAllTerms(content, terms) }
		}
	case ModeSemantic:
		return nil, fail(CodeUnsupported, "semantic retrieval is not supported by this store")
	default:
		return nil, fail(CodeContractViolation, "unknown read mode %q", req.Mode)
	}
	if req.Limit < 0 {
		return nil, fail(CodeContractViolation, "negative limit %d", req.Limit)
	}
	scope, err := scopeJSON(req.Scope)
	if err != nil {
		return nil, err
	}
	var out []Record
	err = s.view(ctx, func(tx *bolt.Tx) error {
		recs, err := liveRecords(tx, route(req.Package, req.PackageVersion, req.Space), scope, req.RecordType, now)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if match != nil {
				var content any
				if err := json.Unmarshal(r.Content, &content); err != nil {
					return fmt.Errorf("%w: record %q content: %v", ErrCorrupt, r.ID, err)
				}
				if !match(&r, content) {
					continue
				}
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortRecords(out)
	if req.Limit > 0 && len(out) > req.Limit {
		out = out[:req.Limit]
	}
	return out, nil
}

// Count returns the number of live records of a scope (of RecordType, when
// set).
func (s *Store) Count(ctx context.Context, req CountRequest) (int, error) {
	if err := checkRoute(req.Package, req.PackageVersion, req.Space); err != nil {
		return 0, err
	}
	now, _, err := s.now(req.Now)
	if err != nil {
		return 0, err
	}
	scope, err := scopeJSON(req.Scope)
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.view(ctx, func(tx *bolt.Tx) error {
		recs, err := liveRecords(tx, route(req.Package, req.PackageVersion, req.Space), scope, req.RecordType, now)
		n = len(recs)
		return err
	})
	return n, err
}

// Write applies one write in its own transaction.
func (s *Store) Write(ctx context.Context, req WriteRequest) (*WriteResult, error) {
	var res *WriteResult
	err := s.update(ctx, func(tx *bolt.Tx) error {
		var err error
		res, err = s.write(tx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Batch applies writes in order in one transaction: all of them, or none
// when one fails (the error says which, and keeps its code).
func (s *Store) Batch(ctx context.Context, reqs []WriteRequest) ([]WriteResult, error) {
	out := make([]WriteResult, len(reqs))
	err := s.update(ctx, func(tx *bolt.Tx) error {
		for i, req := range reqs {
			res, err := s.write(tx, req)
			if err != nil {
				return wrapAt(err, fmt.Sprintf("write %d", i))
			}
			out[i] = *res
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// wrapAt prefixes a domain error's message, keeping its code.
func wrapAt(err error, where string) error {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Code: e.Code, Message: where + ": " + e.Message, Err: e.Err}
	}
	return fmt.Errorf("%s: %w", where, err)
}

// LoadOperationState returns the state stored for key, or nil when there
// is none.
func (s *Store) LoadOperationState(ctx context.Context, key StateKey) (jsontext.Value, error) {
	k, err := stateKey(key)
	if err != nil {
		return nil, err
	}
	var out jsontext.Value
	err = s.view(ctx, func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketStates).Get(k); v != nil {
			out = slices.Clone(v)
		}
		return nil
	})
	return out, err
}

// StoreOperationState stores state (any JSON; the store does not look
// inside) for key; nil or null removes it.
func (s *Store) StoreOperationState(ctx context.Context, key StateKey, state jsontext.Value) error {
	k, err := stateKey(key)
	if err != nil {
		return err
	}
	v, err := compact(state, "state")
	if err != nil {
		return err
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketStates)
		if v == nil || string(v) == "null" {
			return b.Delete(k)
		}
		return b.Put(k, v)
	})
}

// CommitLifecycle checks that every expected source is unchanged, applies
// the output writes, then the source mutations, then stores the operation
// state, in one transaction. Any failure leaves the store as it was and
// is an *Error with code commit_failed whose Err is the cause.
func (s *Store) CommitLifecycle(ctx context.Context, req CommitRequest) (*CommitResult, error) {
	if req.Package == "" || req.PackageVersion == "" || req.Operation == "" {
		return nil, fail(CodeContractViolation, "commit needs package, package_version and operation")
	}
	res := &CommitResult{OutputRecordIDs: []string{}, SourceRecordIDs: []string{}}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		for i, src := range req.ExpectedSources {
			if err := checkSource(tx, src); err != nil {
				return wrapAt(err, fmt.Sprintf("expected source %d", i))
			}
		}
		if err := s.writeAll(tx, req.OutputWrites, "output write", &res.OutputRecordIDs); err != nil {
			return err
		}
		if err := s.writeAll(tx, req.SourceMutations, "source mutation", &res.SourceRecordIDs); err != nil {
			return err
		}
		if len(req.OperationState) == 0 || string(req.OperationState) == "null" {
			return nil
		}
		state, scope, err := withWatermark(req.OperationState, res)
		if err != nil {
			return err
		}
		k, err := stateKey(StateKey{Package: req.Package, PackageVersion: req.PackageVersion, Operation: req.Operation, Scope: scope})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketStates).Put(k, state)
	})
	if err != nil {
		if errors.Is(err, ErrClosed) || errors.Is(err, ctx.Err()) && ctx.Err() != nil {
			return nil, err
		}
		return nil, &Error{Code: CodeCommitFailed, Message: err.Error(), Err: err}
	}
	return res, nil
}

// writeAll applies writes in order inside tx, appending the ids written.
func (s *Store) writeAll(tx *bolt.Tx, writes []WriteRequest, what string, ids *[]string) error {
	for i, w := range writes {
		r, err := s.write(tx, w)
		if err != nil {
			return wrapAt(err, fmt.Sprintf("%s %d", what, i))
		}
		if r.RecordID != "" {
			*ids = append(*ids, r.RecordID)
		}
	}
	return nil
}

func checkSource(tx *bolt.Tx, src ExpectedSource) error {
	id := src.ID
	if id == "" {
		id = src.RecordID
	}
	if id == "" || src.ContentHash == "" {
		return fail(CodeContractViolation, "needs an id and a content_hash")
	}
	r, err := getRecord(tx, id)
	if err != nil {
		return err
	}
	if r == nil {
		return fail(CodeNotFound, "record %q no longer exists", id)
	}
	if src.Package != "" && src.Package != r.Package || src.PackageVersion != "" && src.PackageVersion != r.PackageVersion ||
		src.Space != "" && src.Space != r.Space {
		return fail(CodeConflict, "record %q is in another space", id)
	}
	if src.Scope != nil {
		sj, err := scopeJSON(src.Scope)
		if err != nil {
			return err
		}
		if sj != r.ScopeJSON {
			return fail(CodeConflict, "record %q is in another scope", id)
		}
	}
	if !slices.Contains(ContentHashes(r.Content), src.ContentHash) {
		return fail(CodeConflict, "record %q changed since it was read (stale lifecycle source)", id)
	}
	return nil
}

// withWatermark returns state with its watermark object gaining the
// commit's record ids (other members kept in order), and its scope.
func withWatermark(state jsontext.Value, res *CommitResult) (jsontext.Value, Scope, error) {
	var members map[string]jsontext.Value
	if err := json.Unmarshal(state, &members); err != nil {
		return nil, nil, fail(CodeContractViolation, "operation_state is not an object: %v", err)
	}
	var scope Scope
	if raw, ok := members["scope"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &scope); err != nil {
			return nil, nil, fail(CodeContractViolation, "operation_state.scope: %v", err)
		}
	}
	ids, _ := json.Marshal(map[string][]string{
		"last_output_record_ids":         res.OutputRecordIDs,
		"last_mutated_source_record_ids": res.SourceRecordIDs,
	}, json.Deterministic(true))
	wm := members["watermark"]
	if len(wm) == 0 || wm.Kind() != '{' {
		wm = jsontext.Value("{}")
	}
	wm, err := setMembers(wm, ids)
	if err != nil {
		return nil, nil, fail(CodeContractViolation, "operation_state.watermark: %v", err)
	}
	out, err := setMembers(state, mustObject("watermark", wm))
	if err != nil {
		return nil, nil, fail(CodeContractViolation, "operation_state: %v", err)
	}
	return out, scope, nil
}

func mustObject(name string, v jsontext.Value) jsontext.Value {
	var b bytes.Buffer
	enc := jsontext.NewEncoder(&b)
	enc.WriteToken(jsontext.BeginObject)
	enc.WriteToken(jsontext.String(name))
	enc.WriteValue(v)
	enc.WriteToken(jsontext.EndObject)
	return bytes.TrimSpace(b.Bytes())
}

// setMembers returns obj with the members of patch set: replaced where
// they exist (in place), appended otherwise.
func setMembers(obj, patch jsontext.Value) (jsontext.Value, error) {
	type member struct {
		name  string
		value jsontext.Value
	}
	read := func(v jsontext.Value) ([]member, error) {
		dec := jsontext.NewDecoder(bytes.NewReader(v))
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			return nil, fmt.Errorf("not an object")
		}
		var ms []member
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			name := tok.String() // before the next read voids tok
			val, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			ms = append(ms, member{name, slices.Clone(val)})
		}
		return ms, nil
	}
	base, err := read(obj)
	if err != nil {
		return nil, err
	}
	extra, err := read(patch)
	if err != nil {
		return nil, err
	}
	for _, m := range extra {
		if i := slices.IndexFunc(base, func(b member) bool { return b.name == m.name }); i >= 0 {
			base[i].value = m.value
		} else {
			base = append(base, m)
		}
	}
	var b bytes.Buffer
	enc := jsontext.NewEncoder(&b)
	enc.WriteToken(jsontext.BeginObject)
	for _, m := range base {
		enc.WriteToken(jsontext.String(m.name))
		if err := enc.WriteValue(m.value); err != nil {
			return nil, err
		}
	}
	if err := enc.WriteToken(jsontext.EndObject); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// write applies one write inside tx.
func (s *Store) write(tx *bolt.Tx, req WriteRequest) (*WriteResult, error) {
	if err := checkRoute(req.Package, req.PackageVersion, req.Space); err != nil {
		return nil, err
	}
	switch req.SpaceModel {
	case Document, Collection, Sequence:
	default:
		return nil, fail(CodeContractViolation, "unknown space_model %q", req.SpaceModel)
	}
	if req.RecordType == "" || req.SchemaVersion == "" {
		return nil, fail(CodeContractViolation, "record_type and schema_version are required")
	}
	now, nowText, err := s.now(req.Now)
	if err != nil {
		return nil, err
	}
	scope, err := scopeJSON(req.Scope)
	if err != nil {
		return nil, err
	}
	rt := route(req.Package, req.PackageVersion, req.Space)
	rules := s.rulesFor(Route{req.Package, req.PackageVersion, req.Space})

	switch req.Operation {
	case Delete, Archive:
		if rules.AppendOnly {
			return nil, fail(CodeConstraintViolation, "space %q is append-only: %s refused", req.Space, req.Operation)
		}
		var targets []Record
		if req.RecordID != "" {
			r, err := getRecord(tx, req.RecordID)
			if err != nil {
				return nil, err
			}
			if r == nil || !sameScope(r, req, scope) || !live(r, now) {
				return nil, fail(CodeNotFound, "record %q not found in this scope", req.RecordID)
			}
			targets = []Record{*r}
		} else {
			targets, err = liveRecords(tx, rt, scope, req.RecordType, now)
			if err != nil {
				return nil, err
			}
			sortRecords(targets)
		}
		res := &WriteResult{Operation: req.Operation, Affected: len(targets)}
		for i := range targets {
			r := &targets[i]
			if req.Operation == Delete {
				if err := deleteRecord(tx, rt, r); err != nil {
					return nil, err
				}
			} else {
				r.ArchivedAt, r.UpdatedAt = &nowText, nowText
				if err := putRecord(tx, rt, r); err != nil {
					return nil, err
				}
			}
		}
		if len(targets) > 0 {
			res.RecordID, res.Record = targets[0].ID, &targets[0]
		}
		return res, nil
	case Create, Upsert, Update:
	default:
		return nil, fail(CodeContractViolation, "unknown operation %q", req.Operation)
	}

	content, err := compact(req.Content, "content")
	if err != nil {
		return nil, err
	}
	if content == nil {
		content = jsontext.Value("{}")
	}
	provenance, err := compact(req.Provenance, "provenance")
	if err != nil {
		return nil, err
	}
	if provenance == nil {
		provenance = jsontext.Value("{}")
	}

	// The record this write is about, if it exists.
	var existing *Record
	if req.RecordID != "" {
		r, err := getRecord(tx, req.RecordID)
		if err != nil {
			return nil, err
		}
		switch {
		case r != nil && !sameScope(r, req, scope):
			if req.Operation == Update {
				return nil, fail(CodeNotFound, "record %q not found in this scope", req.RecordID)
			}
			return nil, fail(CodeConflict, "record id %q is taken in another scope", req.RecordID)
		case r != nil && live(r, now):
			existing = r
		case r != nil:
			// Archived or expired: gone for reads, but its id is not free.
			if req.Operation == Update {
				return nil, fail(CodeNotFound, "record %q is archived or expired", req.RecordID)
			}
			return nil, fail(CodeConflict, "record id %q belongs to an archived or expired record", req.RecordID)
		}
	} else if req.SpaceModel == Document {
		recs, err := liveRecords(tx, rt, scope, req.RecordType, now)
		if err != nil {
			return nil, err
		}
		if len(recs) > 0 {
			sortRecords(recs)
			existing = &recs[0]
		}
	}

	switch {
	case req.Operation == Update && existing == nil:
		return nil, fail(CodeNotFound, "no record to update")
	case req.Operation == Create && existing != nil && req.SpaceModel == Document && req.RecordID == "":
		return nil, fail(CodeConflict, "the document of this scope already exists (%s)", existing.ID)
	case req.Operation == Create && existing != nil:
		return nil, fail(CodeConflict, "record %q already exists", existing.ID)
	}

	if existing != nil {
		if rules.AppendOnly {
			return nil, fail(CodeConstraintViolation, "space %q is append-only: %s of %q refused", req.Space, req.Operation, existing.ID)
		}
		if existing.RecordType != req.RecordType {
			return nil, fail(CodeRecordTypeMismatch, "record %q is a %q, not a %q", existing.ID, existing.RecordType, req.RecordType)
		}
		if existing.SpaceModel != req.SpaceModel {
			return nil, fail(CodeContractViolation, "record %q is in a %s space, not %s", existing.ID, existing.SpaceModel, req.SpaceModel)
		}
		r := *existing
		r.SchemaVersion, r.Content, r.Provenance, r.UpdatedAt = req.SchemaVersion, content, provenance, nowText
		if err := putRecord(tx, rt, &r); err != nil {
			return nil, err
		}
		return &WriteResult{Operation: req.Operation, RecordID: r.ID, Record: &r, Affected: 1}, nil
	}

	if rules.Capacity > 0 {
		recs, err := liveRecords(tx, rt, scope, "", now)
		if err != nil {
			return nil, err
		}
		if len(recs) >= rules.Capacity {
			return nil, fail(CodeCapacityExceeded, "scope holds %d records, the capacity of space %q", len(recs), req.Space)
		}
	}
	id := req.RecordID
	if id == "" {
		id = s.opt.NewID()
		if r, err := getRecord(tx, id); err != nil || r != nil {
			return nil, fmt.Errorf("memory: generated id %q already in use", id)
		}
	}
	sum := sha256.Sum256([]byte(scope))
	r := Record{
		ID: id, Package: req.Package, PackageVersion: req.PackageVersion, Space: req.Space, SpaceModel: req.SpaceModel,
		RecordType: req.RecordType, SchemaVersion: req.SchemaVersion, ScopeJSON: scope,
		ScopeHash: "sha256:" + hex.EncodeToString(sum[:]), Content: content, Provenance: provenance,
		CreatedAt: nowText, UpdatedAt: nowText,
	}
	if rules.Retention > 0 {
		exp := now.Add(rules.Retention).UTC().Format(time.RFC3339Nano)
		r.ExpiresAt = &exp
	}
	if req.SpaceModel == Sequence {
		n, err := nextOrdinal(tx, rt, scope)
		if err != nil {
			return nil, err
		}
		r.Ordinal = &n
	}
	if err := putRecord(tx, rt, &r); err != nil {
		return nil, err
	}
	return &WriteResult{Operation: req.Operation, RecordID: id, Record: &r, Affected: 1}, nil
}

func sameScope(r *Record, req WriteRequest, scope string) bool {
	return r.Package == req.Package && r.PackageVersion == req.PackageVersion && r.Space == req.Space && r.ScopeJSON == scope
}

// live reports whether a record is neither archived nor expired at now.
func live(r *Record, now time.Time) bool {
	if r.ArchivedAt != nil {
		return false
	}
	if r.ExpiresAt != nil {
		if exp, err := time.Parse(time.RFC3339Nano, *r.ExpiresAt); err == nil && !exp.After(now) {
			return false
		}
	}
	return true
}

// now parses a request's time, or takes the clock's.
func (s *Store) now(text string) (time.Time, string, error) {
	if text == "" {
		t := s.opt.Clock().UTC()
		return t, t.Format(time.RFC3339Nano), nil
	}
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, "", fail(CodeContractViolation, "now %q is not an RFC 3339 time", text)
	}
	return t, text, nil
}

func checkRoute(pkg, version, space string) error {
	if pkg == "" || version == "" || space == "" {
		return fail(CodeContractViolation, "package, package_version and space are required")
	}
	return nil
}

// compact validates raw JSON and returns it without insignificant space,
// with strings in their minimal escaping; nil stays nil.
func compact(raw jsontext.Value, what string) (jsontext.Value, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	v := slices.Clone(raw)
	if err := v.Compact(jsontext.PreserveRawStrings(false), jsontext.AllowInvalidUTF8(false), jsontext.AllowDuplicateNames(false)); err != nil {
		return nil, fail(CodeContractViolation, "%s is not valid JSON: %v", what, err)
	}
	return v, nil
}

// ContentHashes returns the accepted "sha256:<hex>" hashes of a record's
// content: of its stored compact form, of its canonical form (RFC 8785,
// members sorted), and of the stored form with non-ASCII escaped.
func ContentHashes(content jsontext.Value) []string {
	forms := []jsontext.Value{content}
	canon := slices.Clone(content)
	if canon.Canonicalize() == nil {
		forms = append(forms, canon)
	}
	forms = append(forms, asciiEscaped(content))
	out := make([]string, 0, len(forms))
	for _, f := range forms {
		sum := sha256.Sum256(f)
		if h := "sha256:" + hex.EncodeToString(sum[:]); !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// asciiEscaped writes every non-ASCII character of JSON text as \uXXXX
// (surrogate pairs above the BMP), as Python's json.dumps does by default.
func asciiEscaped(v jsontext.Value) jsontext.Value {
	var b strings.Builder
	for _, r := range string(v) {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return jsontext.Value(b.String())
}

// scopeJSON is the scope as compact JSON with keys in byte order.
func scopeJSON(scope Scope) (string, error) {
	if scope == nil {
		return "{}", nil
	}
	b, err := json.Marshal(scope, json.Deterministic(true))
	if err != nil {
		return "", fail(CodeContractViolation, "scope: %v", err)
	}
	return string(b), nil
}

// Keys are built from length-prefixed parts, so no part can run into the
// next and prefix scans are exact.
func appendPart(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func route(pkg, version, space string) []byte {
	return appendPart(appendPart(appendPart(nil, pkg), version), space)
}

func scopePrefix(rt []byte, scope string) []byte { return appendPart(slices.Clone(rt), scope) }

func indexKey(rt []byte, scope, id string) []byte { return appendPart(scopePrefix(rt, scope), id) }

func stateKey(k StateKey) ([]byte, error) {
	if k.Package == "" || k.PackageVersion == "" || k.Operation == "" {
		return nil, fail(CodeContractViolation, "package, package_version and operation are required")
	}
	scope, err := scopeJSON(k.Scope)
	if err != nil {
		return nil, err
	}
	return appendPart(appendPart(appendPart(appendPart(nil, k.Package), k.PackageVersion), k.Operation), scope), nil
}

func getRecord(tx *bolt.Tx, id string) (*Record, error) {
	v := tx.Bucket(bucketRecords).Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("%w: record %q: %v", ErrCorrupt, id, err)
	}
	return &r, nil
}

func putRecord(tx *bolt.Tx, rt []byte, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketRecords).Put([]byte(r.ID), b); err != nil {
		return err
	}
	return tx.Bucket(bucketIndex).Put(indexKey(rt, r.ScopeJSON, r.ID), nil)
}

func deleteRecord(tx *bolt.Tx, rt []byte, r *Record) error {
	if err := tx.Bucket(bucketRecords).Delete([]byte(r.ID)); err != nil {
		return err
	}
	return tx.Bucket(bucketIndex).Delete(indexKey(rt, r.ScopeJSON, r.ID))
}

// liveRecords returns the live records of a scope (of recordType, when
// set), unordered.
func liveRecords(tx *bolt.Tx, rt []byte, scope, recordType string, now time.Time) ([]Record, error) {
	prefix := scopePrefix(rt, scope)
	var out []Record
	c := tx.Bucket(bucketIndex).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		id, n := binary.Uvarint(k[len(prefix):])
		if n <= 0 || len(k) != len(prefix)+n+int(id) {
			return nil, fmt.Errorf("%w: index key %x", ErrCorrupt, k)
		}
		r, err := getRecord(tx, string(k[len(prefix)+n:]))
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, fmt.Errorf("%w: index names missing record %q", ErrCorrupt, k[len(prefix)+n:])
		}
		if (recordType == "" || r.RecordType == recordType) && live(r, now) {
			out = append(out, *r)
		}
	}
	return out, nil
}

func nextOrdinal(tx *bolt.Tx, rt []byte, scope string) (int64, error) {
	b := tx.Bucket(bucketOrdinals)
	k := scopePrefix(rt, scope)
	var n uint64
	if v := b.Get(k); len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	n++
	return int64(n), b.Put(k, binary.BigEndian.AppendUint64(nil, n))
}

// sortRecords orders by ordinal (none last), creation time, id.
func sortRecords(rs []Record) {
	slices.SortStableFunc(rs, func(a, b Record) int {
		switch {
		case a.Ordinal != nil && b.Ordinal == nil:
			return -1
		case a.Ordinal == nil && b.Ordinal != nil:
			return 1
		case a.Ordinal != nil && *a.Ordinal != *b.Ordinal:
			if *a.Ordinal < *b.Ordinal {
				return -1
			}
			return 1
		}
		ta, ea := time.Parse(time.RFC3339Nano, a.CreatedAt)
		tb, eb := time.Parse(time.RFC3339Nano, b.CreatedAt)
		if ea == nil && eb == nil && !ta.Equal(tb) {
			return ta.Compare(tb)
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// matchPath is the filter rule: descend objects by segment and every array
// element at any level; at the end, equality, or containment in an array.
func matchPath(v any, segs []string, want any) bool {
	if len(segs) == 0 && reflect.DeepEqual(v, want) {
		return true
	}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if matchPath(e, segs, want) {
				return true
			}
		}
	case map[string]any:
		if len(segs) > 0 {
			child, ok := x[segs[0]]
			return ok && matchPath(child, segs[1:], want)
		}
	}
	return false
}

// hasAllTerms reports whether the string values of v together contain
// every term.
func hasAllTerms(v any, terms []string) bool {
	have := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			tokenize.Each(x, tokenize.Search, func(t string) { have[t] = true })
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	for _, t := range terms {
		if !have[t] {
			return false
		}
	}
	return true
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return "mem-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
