// Command memory is an AgentPM memory provider: a configured
// `type: "process"` memory implementation that speaks agentpm-service v1 on
// stdin and stdout and keeps its records in a bbolt database file (package
// internal/memory).
//
//	memory -db FILE [-lock-timeout 5s] [-v]
//
// Every write, state store and lifecycle commit is one transaction synced to
// disk before it is answered: what the provider answered as written survives
// it being killed (SIGKILL) and restarted. The file is locked while open; a
// restarted provider whose predecessor lingers waits up to -lock-timeout for
// it.
//
// It serves read (modes key, filter, chronological, full_text), write
// (create, upsert, update, delete, archive), count, load_operation_state,
// store_operation_state and commit_lifecycle (all or nothing). The handshake
// configures append-only spaces from the routed space snapshots, advertises
// the store's descriptor (flat, and as descriptor, beside packages: the form
// every consumer reads) and attests every routed package version ready.
// Semantic reads are not supported and not advertised; asking for one gets an
// ok:false result with code unsupported_capability. Domain failures
// (not_found, conflict, constraint_violation, capacity_exceeded,
// record_type_mismatch, contract_violation, commit_failed) are ok:false
// results; a failure of the store itself is an error frame. Diagnostics go
// to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/examples/providers/internal/cli"
	"github.com/bridgekit/bridgekit/examples/providers/internal/memory"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/service"
)

func main() {
	db := flag.String("db", "", "bbolt database file (created if missing)")
	lock := flag.Duration("lock-timeout", 5*time.Second, "how long to wait for another process's lock on -db")
	capacity := flag.Int("capacity", 0, "the most live records a scope may hold in each space (0: no limit, and capacity is not advertised)")
	verbose := flag.Bool("v", false, "log diagnostics to stderr")
	flag.Parse()
	log := cli.Logger(*verbose)
	if *db == "" {
		os.Exit(cli.Fatal("memory", errors.New("-db is required")))
	}
	if *capacity < 0 {
		os.Exit(cli.Fatal("memory", errors.New("-capacity must not be negative")))
	}
	store, err := memory.Open(*db, memory.Options{LockTimeout: *lock})
	if err != nil {
		os.Exit(cli.Fatal("memory", err))
	}
	srv, err := service.New(agentpmservice.ServiceRoleMemory, handlers(store, *capacity), &service.Options{Conn: rpc.Options{Logger: log}})
	if err != nil {
		store.Close()
		os.Exit(cli.Fatal("memory", err))
	}
	os.Exit(cli.Serve("memory", srv, log, 5*time.Second, func() {
		if err := store.Close(); err != nil {
			log.Error("closing the store", "err", err)
		}
	}))
}

// handlers serves the memory role with store; capacity, when positive,
// limits the live records of a scope in every space.
func handlers(store *memory.Store, capacity int) *agentpmservice.ServiceHandlers {
	return &agentpmservice.ServiceHandlers{
		InitializeMemory: func(_ context.Context, p *agentpmservice.MemoryInitialize) (*agentpmservice.MemoryReadiness, error) {
			rules := map[memory.Route]memory.Rules{}
			attested := map[[2]string]bool{}
			r := &agentpmservice.MemoryReadiness{Packages: []agentpmservice.MemoryPackageAttestation{}}
			for _, sp := range p.Spaces {
				rule := memory.Rules{AppendOnly: sp.AppendOnly != nil && *sp.AppendOnly, Capacity: capacity}
				if rule != (memory.Rules{}) {
					rules[memory.Route{Package: sp.Package, PackageVersion: sp.PackageVersion, Space: sp.Space}] = rule
				}
				if k := [2]string{sp.Package, sp.PackageVersion}; !attested[k] {
					attested[k] = true
					name, version := sp.Package, sp.PackageVersion
					r.Packages = append(r.Packages, agentpmservice.MemoryPackageAttestation{Package: &name, Version: &version, Ready: true})
				}
			}
			store.Configure(rules)
			d := store.Descriptor()
			r.Descriptor = &agentpmservice.MemoryDescriptor{
				SpaceModels: convert[agentpmservice.MemorySpaceModel](d.SpaceModels), RetrievalModes: convert[agentpmservice.MemoryReadMode](d.RetrievalModes),
				RetentionActions: convert[agentpmservice.MemoryRetentionAction](d.RetentionActions), Constraints: convert[agentpmservice.MemoryConstraint](d.Constraints),
				Capacity: d.Capacity, DurableTriggerState: d.DurableTriggerState, AtomicBatches: d.AtomicBatches,
			}
			return r, nil
		},
		MemoryRead: func(ctx context.Context, p *agentpmservice.MemoryReadPayload) (*agentpmservice.MemoryReadResult, error) {
			q := &p.Request
			res := &agentpmservice.MemoryReadResult{Package: q.Package, PackageVersion: q.PackageVersion, Space: q.Space, Mode: &q.Mode}
			req := memory.ReadRequest{Package: q.Package, PackageVersion: q.PackageVersion, Space: q.Space, Scope: memory.Scope(q.Scope),
				Mode: memory.ReadMode(q.Mode), RecordID: deref(q.RecordID), RecordType: deref(q.RecordType), Query: deref(q.Query), Now: q.Now}
			if q.Limit != nil {
				req.Limit = int(max(*q.Limit, 0))
			}
			if len(q.Filter) > 0 && string(q.Filter) != "null" {
				if err := json.Unmarshal(q.Filter, &req.Filter); err != nil {
					res.Error = &agentpmservice.MemoryRuntimeFailure{Code: string(memory.CodeContractViolation), Message: "filter must be an object of dot paths: " + err.Error()}
					return res, nil
				}
			}
			records, err := store.Read(ctx, req)
			if res.Error, err = failure(err); err != nil || res.Error != nil {
				return res, err
			}
			if err := recode(records, &res.Records); err != nil {
				return nil, err
			}
			n := int64(len(records))
			res.Ok, res.Count = true, &n
			return res, nil
		},
		MemoryWrite: func(ctx context.Context, p *agentpmservice.MemoryWritePayload) (*agentpmservice.MemoryWriteResult, error) {
			q := &p.Request
			res := &agentpmservice.MemoryWriteResult{Package: q.Package, PackageVersion: q.PackageVersion, Space: q.Space, Operation: &q.Operation}
			w, err := store.Write(ctx, writeRequest(q))
			if res.Error, err = failure(err); err != nil || res.Error != nil {
				return res, err
			}
			res.Ok = true
			if w.RecordID != "" {
				res.RecordID = wire.Some(w.RecordID)
			}
			if w.Record != nil {
				var rec agentpmservice.StoredMemoryRecord
				if err := recode(w.Record, &rec); err != nil {
					return nil, err
				}
				res.Record = wire.Some(rec)
			}
			return res, nil
		},
		MemoryCount: func(ctx context.Context, p *agentpmservice.MemoryCountPayload) (*agentpmservice.MemoryCountResult, error) {
			q := &p.Request
			res := &agentpmservice.MemoryCountResult{Package: q.Package, PackageVersion: q.PackageVersion, Space: q.Space}
			n, err := store.Count(ctx, memory.CountRequest{Package: q.Package, PackageVersion: q.PackageVersion, Space: q.Space,
				Scope: memory.Scope(q.Scope), RecordType: deref(q.RecordType), Now: deref(q.Now)})
			if res.Error, err = failure(err); err != nil || res.Error != nil {
				return res, err
			}
			count := int64(n)
			res.Ok, res.Count = true, &count
			return res, nil
		},
		MemoryLoadOperationState: func(ctx context.Context, p *agentpmservice.MemoryLoadStatePayload) (*agentpmservice.MemoryStateResult, error) {
			q := &p.Request
			res := &agentpmservice.MemoryStateResult{Package: q.Package, PackageVersion: q.PackageVersion, Operation: q.Operation}
			raw, err := store.LoadOperationState(ctx, stateKey(q))
			if res.Error, err = failure(err); err != nil || res.Error != nil {
				return res, err
			}
			res.Ok, res.State = true, wire.Null[agentpmservice.MemoryOperationState]()
			if raw != nil {
				var st agentpmservice.MemoryOperationState
				if err := json.Unmarshal(raw, &st); err != nil {
					return nil, err
				}
				res.State = wire.Some(st)
			}
			return res, nil
		},
		MemoryStoreOperationState: func(ctx context.Context, p *agentpmservice.MemoryStoreStatePayload) (*agentpmservice.MemoryStoreStateResult, error) {
			q := &p.Request
			res := &agentpmservice.MemoryStoreStateResult{Package: q.Package, PackageVersion: q.PackageVersion, Operation: q.Operation}
			var raw jsontext.Value
			if p.State != nil {
				var err error
				if raw, err = json.Marshal(p.State, wire.Fidelity); err != nil {
					return nil, err
				}
			}
			var err error
			if res.Error, err = failure(store.StoreOperationState(ctx, stateKey(q), raw)); err != nil || res.Error != nil {
				return res, err
			}
			res.Ok = true
			return res, nil
		},
		MemoryCommitLifecycle: func(ctx context.Context, p *agentpmservice.MemoryCommitPayload) (*agentpmservice.CommitLifecycleResult, error) {
			q := &p.Request
			res := &agentpmservice.CommitLifecycleResult{Package: q.Package, PackageVersion: q.PackageVersion, Operation: q.Operation}
			req := memory.CommitRequest{Package: q.Package, PackageVersion: q.PackageVersion, Operation: q.Operation, Now: deref(q.Now)}
			for _, e := range q.ExpectedSources {
				req.ExpectedSources = append(req.ExpectedSources, memory.ExpectedSource{ID: deref(e.ID), RecordID: deref(e.RecordID),
					ContentHash: e.ContentHash, Package: deref(e.Package), PackageVersion: deref(e.PackageVersion), Space: deref(e.Space), Scope: memory.Scope(e.Scope)})
			}
			for i := range q.OutputWrites {
				req.OutputWrites = append(req.OutputWrites, writeRequest(&q.OutputWrites[i]))
			}
			for i := range q.SourceMutations {
				req.SourceMutations = append(req.SourceMutations, writeRequest(&q.SourceMutations[i]))
			}
			if q.OperationState != nil {
				raw, err := json.Marshal(q.OperationState, wire.Fidelity)
				if err != nil {
					return nil, err
				}
				req.OperationState = raw
			}
			out, err := store.CommitLifecycle(ctx, req)
			if res.Error, err = failure(err); err != nil || res.Error != nil {
				return res, err
			}
			res.Ok, res.OutputRecordIDs, res.SourceRecordIDs = true, nonNil(out.OutputRecordIDs), nonNil(out.SourceRecordIDs)
			return res, nil
		},
	}
}

// failure sorts an error of the store: a domain failure becomes the
// result's typed error (ok stays false), anything else (the store closed,
// an I/O error, the request's context ending) an error frame.
func failure(err error) (*agentpmservice.MemoryRuntimeFailure, error) {
	if err == nil {
		return nil, nil
	}
	if e, ok := errors.AsType[*memory.Error](err); ok {
		return &agentpmservice.MemoryRuntimeFailure{Code: string(e.Code), Message: e.Error()}, nil
	}
	return nil, err
}

func writeRequest(q *agentpmservice.MemoryWriteRequest) memory.WriteRequest {
	return memory.WriteRequest{Package: q.Package, PackageVersion: q.PackageVersion, Space: q.Space,
		SpaceModel: memory.SpaceModel(q.SpaceModel), RecordType: q.RecordType, SchemaVersion: q.SchemaVersion,
		Scope: memory.Scope(q.Scope), Operation: memory.Operation(q.Operation), RecordID: deref(q.RecordID),
		Content: q.Content, Provenance: q.Provenance, Now: q.Now}
}

func stateKey(q *agentpmservice.MemoryOperationStateKey) memory.StateKey {
	return memory.StateKey{Package: q.Package, PackageVersion: q.PackageVersion, Operation: q.Operation, Scope: memory.Scope(q.Scope)}
}

// recode converts between the store's records and the generated types,
// which share their JSON (StoredMemoryRecord).
func recode(from, to any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, to)
}

func convert[T ~string](list []string) []T {
	out := make([]T, len(list))
	for i, s := range list {
		out[i] = T(s)
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
