package memory

import (
	"github.com/go-json-experiment/json/jsontext"
)

// SpaceModel is how a memory space holds records.
type SpaceModel string

const (
	// Document: one record per scope (create conflicts with it; upsert
	// replaces it).
	Document SpaceModel = "document"
	// Collection: any number of records per scope.
	Collection SpaceModel = "collection"
	// Sequence: a collection whose records get increasing ordinals per
	// scope, the order chronological reads return.
	Sequence SpaceModel = "sequence"
)

// ReadMode selects how Read picks records.
type ReadMode string

const (
	ModeKey           ReadMode = "key"           // the record RecordID names
	ModeFilter        ReadMode = "filter"        // records whose content matches Filter
	ModeChronological ReadMode = "chronological" // every record, oldest first
	ModeFullText      ReadMode = "full_text"     // records whose text has every Query term
	ModeSemantic      ReadMode = "semantic"      // not supported: ErrUnsupported
)

// Operation is what Write does.
type Operation string

const (
	Create  Operation = "create"
	Upsert  Operation = "upsert"
	Update  Operation = "update"
	Delete  Operation = "delete"
	Archive Operation = "archive"
)

// Scope partitions a space's records (user, project, ...). Records are
// only ever seen through the exact scope they were written with.
type Scope map[string]string

// Record is a stored memory record; its JSON is the protocol's
// StoredMemoryRecord.
type Record struct {
	ID             string         `json:"id"`
	Package        string         `json:"package"`
	PackageVersion string         `json:"package_version"`
	Space          string         `json:"space"`
	SpaceModel     SpaceModel     `json:"space_model"`
	RecordType     string         `json:"record_type"`
	SchemaVersion  string         `json:"schema_version"`
	ScopeJSON      string         `json:"scope_json"` // the scope as compact JSON, keys sorted
	ScopeHash      string         `json:"scope_hash"` // "sha256:" + hex of ScopeJSON
	Content        jsontext.Value `json:"content"`
	Provenance     jsontext.Value `json:"provenance"`
	CreatedAt      string         `json:"created_at"`
	UpdatedAt      string         `json:"updated_at"`
	ExpiresAt      *string        `json:"expires_at"`
	ArchivedAt     *string        `json:"archived_at"`
	Ordinal        *int64         `json:"ordinal"`
}

// ReadRequest is a read's request.
type ReadRequest struct {
	Package, PackageVersion, Space string
	Scope                          Scope
	Mode                           ReadMode
	// RecordID is required in ModeKey.
	RecordID string
	// RecordType, when set, keeps records of that type only.
	RecordType string
	// Filter (ModeFilter) maps dot paths into the content to the JSON
	// value expected there; every entry must match. A path descends into
	// objects and, at any level, into every element of an array; an array
	// matches a scalar it contains or an equal array; null matches a
	// present null only.
	Filter map[string]jsontext.Value
	// Query (ModeFullText): records whose string values contain every term
	// of the query (cut by package tokenize); an empty query matches all.
	Query string
	// Limit caps the number of records; 0 means no limit.
	Limit int
	// Now is the request's time (RFC 3339); records expired by then are
	// not returned. Empty means the store's clock.
	Now string
}

// WriteRequest is a write's request.
type WriteRequest struct {
	Package, PackageVersion, Space string
	SpaceModel                     SpaceModel
	RecordType, SchemaVersion      string
	Scope                          Scope
	Operation                      Operation
	// RecordID names the record to update, delete or archive, or the id a
	// create should use. Without it, create and upsert make a new id
	// ("mem-" and a random UUID), and delete and archive apply to every
	// live record of the scope (of RecordType, when set).
	RecordID string
	// Content and Provenance are any JSON; absent means {}.
	Content, Provenance jsontext.Value
	// Now is the write's time (RFC 3339): created_at/updated_at/archived_at
	// take it as given. Empty means the store's clock.
	Now string
}

// WriteResult says what a write did.
type WriteResult struct {
	Operation Operation
	// RecordID and Record are the record written, or the first one deleted
	// or archived (as it was before a delete, after an archive); empty and
	// nil when a scope-wide delete or archive found nothing.
	RecordID string
	Record   *Record
	// Affected counts the records changed.
	Affected int
}

// CountRequest counts live records.
type CountRequest struct {
	Package, PackageVersion, Space string
	Scope                          Scope
	RecordType                     string
	Now                            string
}

// StateKey names an operation's state.
type StateKey struct {
	Package, PackageVersion, Operation string
	Scope                              Scope
}

// ExpectedSource is a record a lifecycle commit was computed from, with
// the hash of the content it saw.
type ExpectedSource struct {
	// ID (or RecordID) names the record.
	ID, RecordID string
	// ContentHash is "sha256:" + hex of the content's JSON. The store
	// accepts the hash of the content as stored (compact, members in the
	// order written), in canonical form (RFC 8785: members sorted), or
	// with non-ASCII escaped, which covers the encoders of JavaScript,
	// Rust and Python.
	ContentHash string
	// Package, PackageVersion, Space and Scope, when set, must be the
	// record's.
	Package, PackageVersion, Space string
	Scope                          Scope
}

// CommitRequest is a lifecycle commit: all of it happens, or none.
type CommitRequest struct {
	Package, PackageVersion, Operation string
	ExpectedSources                    []ExpectedSource
	OutputWrites, SourceMutations      []WriteRequest
	// OperationState, when set, is stored for (package, version,
	// operation, its own "scope" member), with its "watermark" object
	// gaining last_output_record_ids and last_mutated_source_record_ids.
	OperationState jsontext.Value
	Now            string
}

// CommitResult lists the ids a commit wrote.
type CommitResult struct {
	OutputRecordIDs, SourceRecordIDs []string
}

// Descriptor is the capability advertisement of the store, the
// protocol's MemoryDescriptor.
type Descriptor struct {
	SpaceModels         []string `json:"space_models"`
	RetrievalModes      []string `json:"retrieval_modes"`
	RetentionActions    []string `json:"retention_actions"`
	Constraints         []string `json:"constraints"`
	Capacity            bool     `json:"capacity"`
	DurableTriggerState bool     `json:"durable_trigger_state"`
	AtomicBatches       bool     `json:"atomic_batches"`
}
