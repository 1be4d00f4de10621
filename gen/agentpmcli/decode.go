package agentpmcli

// Hand-written beside the generated code: decoding what the CLI writes on
// stdout, with the typed errors a consumer needs.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// The categories of a failed agentpm run, as errors: errors.Is(err,
// ErrTimeout) holds for a *RunError of that category. A category this
// version does not know matches ErrOther, as the Harness reads it.
var (
	ErrResolution        = errors.New("agentpm run: resolution")
	ErrRuntime           = errors.New("agentpm run: runtime")
	ErrSchema            = errors.New("agentpm run: schema")
	ErrTimeout           = errors.New("agentpm run: timeout")
	ErrOutputLimit       = errors.New("agentpm run: output_limit")
	ErrMalformedOutput   = errors.New("agentpm run: malformed_output")
	ErrSubprocessFailure = errors.New("agentpm run: subprocess_failure")
	ErrOther             = errors.New("agentpm run: other")
)

var categoryErrs = map[RunErrorCategory]error{
	RunErrorCategoryResolution: ErrResolution, RunErrorCategoryRuntime: ErrRuntime, RunErrorCategorySchema: ErrSchema,
	RunErrorCategoryTimeout: ErrTimeout, RunErrorCategoryOutputLimit: ErrOutputLimit, RunErrorCategoryMalformedOutput: ErrMalformedOutput,
	RunErrorCategorySubprocessFailure: ErrSubprocessFailure, RunErrorCategoryOther: ErrOther,
}

// Error implements error: a *RunError is the typed error of a failed run.
func (e *RunError) Error() string {
	return fmt.Sprintf("agentpm run --machine failed with %s error: %s", e.Category, e.Message)
}

// Is reports whether target is the sentinel of e's category (ErrOther for
// a category this version does not know).
func (e *RunError) Is(target error) bool {
	want, ok := categoryErrs[e.Category]
	if !ok {
		want = ErrOther
	}
	return target == want
}

// Retryable reports whether the Harness retries a tool that failed so:
// timeout and subprocess_failure.
func (e *RunError) Retryable() bool {
	return e.Category == RunErrorCategoryTimeout || e.Category == RunErrorCategorySubprocessFailure
}

// ParseRunOutput decodes what agentpm run --machine wrote on stdout: exactly
// one JSON document (surrounding whitespace allowed). Output that is not
// one run result of schema version 1 is a *RunError of category
// malformed_output wrapping the decoding error, as the Harness reads it.
func ParseRunOutput(stdout []byte) (*RunResult, error) {
	var r RunResult
	if err := decodeOne(stdout, &r); err != nil {
		return nil, &RunError{Category: RunErrorCategoryMalformedOutput, Message: "agentpm run --machine output: " + err.Error()}
	}
	return &r, nil
}

// Err returns nil for a success, else the run's *RunError: the error
// member (category other when it is absent), or malformed_output for a
// status this version does not know.
func (r *RunResult) Err() error {
	switch {
	case r.Success != nil:
		return nil
	case r.Error != nil && r.Error.Error != nil:
		return r.Error.Error
	case r.Error != nil:
		return &RunError{Category: RunErrorCategoryOther, Message: "agentpm run failed without a machine error payload"}
	}
	return &RunError{Category: RunErrorCategoryMalformedOutput, Message: fmt.Sprintf("agentpm run --machine status %q is neither success nor error", r.Tag())}
}

// Output returns the tool's output (null when a success carries none), or
// the run's error.
func (r *RunResult) Output() (jsontext.Value, error) {
	if err := r.Err(); err != nil {
		return nil, err
	}
	if r.Success.Output == nil {
		return jsontext.Value("null"), nil
	}
	return r.Success.Output, nil
}

// DecodeKnowledgeQuery decodes what agentpm knowledge query --json wrote on
// stdout: one (pretty-printed) JSON document.
func DecodeKnowledgeQuery(stdout []byte) (*KnowledgeQueryResult, error) {
	var r KnowledgeQueryResult
	if err := decodeOne(stdout, &r); err != nil {
		return nil, fmt.Errorf("agentpm knowledge query --json output: %w", err)
	}
	return &r, nil
}

// RuntimeResult converts a query's rows into the KnowledgeRuntimeResult a
// vector_query retrieve answers with, as the Harness's local vector
// retrieval does: rank is the row's position plus one, and each row is also
// cited unless req.ReturnCitations is false. Members the CLI wrote as null
// are left out.
func (r *KnowledgeQueryResult) RuntimeResult(req *agentpmservice.KnowledgeRuntimeRequest) *agentpmservice.KnowledgeRuntimeResult {
	out := &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: req.Package, Version: req.Version, Mode: req.Mode, Query: req.Query,
		Results: make([]agentpmservice.KnowledgeRetrievalResult, 0, len(r.Results))}
	cite := req.ReturnCitations == nil || *req.ReturnCitations
	if cite {
		out.Citations = make([]agentpmservice.KnowledgeCitation, 0, len(r.Results))
	}
	for i, row := range r.Results {
		out.Results = append(out.Results, agentpmservice.KnowledgeRetrievalResult{
			Rank: int64(i + 1), Score: row.Score, ChunkID: row.ChunkID, SourceID: row.SourceID,
			SourceTitle: row.SourceTitle, SourceURI: row.SourceURI, Text: row.Text,
			ChunkMetadata: notNull(row.ChunkMetadata), SourceMetadata: notNull(row.SourceMetadata),
		})
		if cite {
			out.Citations = append(out.Citations, agentpmservice.KnowledgeCitation{ChunkID: row.ChunkID, SourceID: row.SourceID, Title: row.SourceTitle, URI: row.SourceURI})
		}
	}
	return out
}

func notNull(v jsontext.Value) jsontext.Value {
	if string(v) == "null" {
		return nil
	}
	return v
}

// The protocol agentpm serve --mcp --machine speaks on stdout.
const (
	MCPMachineProtocol = "agentpm-mcp-machine"
	MCPMachineVersion  = 1
)

// DecodeMCPMachineEvent decodes one line of agentpm serve --mcp --machine.
// The line must name protocol agentpm-mcp-machine, version 1 and schema
// version 1 (else an error matching envelope.ErrProtocol or
// envelope.ErrVersion), also when its event is one this version does not
// know (kept verbatim in Unknown).
func DecodeMCPMachineEvent(line []byte) (*MCPMachineEvent, error) {
	var head struct {
		Protocol      *string `json:"protocol"`
		Version       *int64  `json:"version"`
		SchemaVersion *int64  `json:"schema_version"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", envelope.ErrMalformed, err)
	}
	switch {
	case head.Protocol == nil || *head.Protocol != MCPMachineProtocol:
		return nil, fmt.Errorf("%w: want %s", envelope.ErrProtocol, MCPMachineProtocol)
	case head.Version == nil || *head.Version != MCPMachineVersion || head.SchemaVersion == nil || *head.SchemaVersion != 1:
		return nil, fmt.Errorf("%w: want version %d and schema_version 1", envelope.ErrVersion, MCPMachineVersion)
	}
	var ev MCPMachineEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return nil, err
	}
	return &ev, nil
}

// MCPMachineEvents reads agentpm serve --mcp --machine's stdout line by line
// (blank lines skipped, lines up to ndjson.DefaultMaxFrame) and yields each
// event, or the error of a line that is not one; reading goes on after a
// bad line. It ends at end of input; a read error is yielded last.
func MCPMachineEvents(r io.Reader) iter.Seq2[*MCPMachineEvent, error] {
	return func(yield func(*MCPMachineEvent, error) bool) {
		lines := ndjson.NewReader(r, 0)
		for {
			line, err := lines.ReadFrame()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !yield(nil, err) || !errors.Is(err, ndjson.ErrFrameTooLarge) {
					return
				}
				continue
			}
			if !yield(DecodeMCPMachineEvent(line)) {
				return
			}
		}
	}
}

// decodeOne decodes exactly one JSON value from data into v.
func decodeOne(data []byte, v any) error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if err := json.UnmarshalDecode(dec, v, wire.Fidelity); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("more than one JSON document")
	}
	return nil
}
