// Package memory is the engine of the example memory provider: a store
// of memory records on an embedded bbolt database, with the primitives of
// the agentpm-service memory role — read, write, count, operation state
// (load and store), atomic batches and lifecycle commits — and typed
// failures.
//
// # Durability
//
// The store is one bbolt file. Every Write, Batch, StoreOperationState and
// CommitLifecycle is one transaction that is fsynced before the call
// returns: once a call has returned, its effect survives the process being
// killed (kill -9) or the machine losing power, and a transaction cut
// short leaves no trace. The file is locked while open, so a second
// process (a provider restarted while the old one lingers) waits up to
// Options.LockTimeout and then fails with ErrLocked instead of corrupting
// it. Check verifies the file.
//
// # Records and scopes
//
// A record lives in a space of a package version (a Route) and a Scope;
// every read, count, update and delete sees only the records of the exact
// route and scope it names, and a record id used from another scope is
// not found. Records are live until archived or, in a space with a
// Retention rule, expired; archived and expired records are kept but no
// longer read, counted or updated. Space models: Document (one record per
// scope), Collection, and Sequence (ordinals allocated per scope, never
// reused, surviving restarts). Rules (Configure) add append-only spaces,
// capacities and retention, as a provider learns them from its initialize
// payload.
//
// Reads return records ordered by ordinal (records without one last),
// then creation time, then id. Modes: key, filter (dot paths into the
// content, descending arrays; leaf arrays match by containment, whole
// arrays by equality, null only a present null), chronological, and
// full_text (every query term, cut by package tokenize, present in the
// content's string values). Semantic reads are not supported and say so
// with ErrUnsupported; Descriptor advertises exactly what is supported.
//
// # Lifecycle commits
//
// CommitLifecycle checks that each expected source still exists with the
// content hash the caller saw, applies the output writes and then the
// source mutations, and stores the operation state with its watermark
// extended by the ids written — all in one transaction, or nothing.
//
// # Errors
//
// Domain failures are *Error values with a protocol Code (not_found,
// conflict, capacity_exceeded, constraint_violation, record_type_mismatch,
// contract_violation, unsupported_capability, commit_failed), matched with
// errors.Is against the sentinels (ErrNotFound, ...); a provider sends
// them as ok:false results. ErrClosed, ErrLocked, ErrCorrupt and I/O
// errors are failures of the store itself.
//
// # Mapping onto the memory role
//
// The methods take and return the protocol's shapes: ReadRequest,
// WriteRequest, CountRequest, StateKey and CommitRequest have the fields
// of the requests of read, write, count, load_operation_state /
// store_operation_state and commit_lifecycle; Record marshals to
// StoredMemoryRecord and Descriptor to MemoryDescriptor.
package memory
