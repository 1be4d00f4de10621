package interop

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// tourDocs are the documents of testdata/interop/acp-ts/tour.json: every
// session/update kind of ACP v0.12.2, which the TypeScript agent sends, and
// the extension updates it sends after them.
type tourDocs struct {
	Updates          []jsontext.Value `json:"updates"`
	ExtensionUpdates []jsontext.Value `json:"extensionUpdates"`
}

func loadTour(t *testing.T) tourDocs {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(peerDir, "tour.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d tourDocs
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("tour.json: %v", err)
	}
	return d
}

func sameJSON(t *testing.T, a, b []byte) bool { return wiretest.EqualJSON(t, a, b) }

func ptr[T any](v T) *T { return &v }

func textBlock(s string) acp.ContentBlock { return acp.ContentBlock{Text: &acp.TextContent{Text: s}} }

// tourUpdates builds, as typed values, the session/update documents of
// tour.json's "updates" in order. The Go agent sends them; the Go client
// expects them.
func tourUpdates() []acp.SessionUpdate {
	chunk := func(b acp.ContentBlock) *acp.ContentChunk { return &acp.ContentChunk{Content: b} }
	return []acp.SessionUpdate{
		{UserMessageChunk: chunk(acp.ContentBlock{Text: &acp.TextContent{
			Text:        "Please summarise notes.txt",
			Annotations: wire.Some(acp.Annotations{Audience: wire.Some([]acp.Role{acp.RoleUser}), Priority: wire.Some(0.5)}),
		}})},
		{UserMessageChunk: chunk(acp.ContentBlock{Image: &acp.ImageContent{
			Data: "iVBORw0KGgo=", MIMEType: "image/png", URI: wire.Some("file:///workspace/diagram.png"),
		}})},
		{UserMessageChunk: chunk(acp.ContentBlock{Audio: &acp.AudioContent{Data: "UklGRiQAAABXQVZF", MIMEType: "audio/wav"}})},
		{UserMessageChunk: chunk(acp.ContentBlock{ResourceLink: &acp.ResourceLink{
			URI: "file:///workspace/notes.txt", Name: "notes.txt", Title: wire.Some("Notes"),
			Description: wire.Some("Meeting notes"), MIMEType: wire.Some("text/plain"), Size: wire.Some[int64](42),
		}})},
		{UserMessageChunk: chunk(acp.ContentBlock{Resource: &acp.EmbeddedResource{Resource: acp.EmbeddedResourceResource{
			TextResourceContents: &acp.TextResourceContents{URI: "file:///workspace/todo.md", MIMEType: wire.Some("text/markdown"), Text: "- ship it\n"},
		}}})},
		{UserMessageChunk: chunk(acp.ContentBlock{Resource: &acp.EmbeddedResource{Resource: acp.EmbeddedResourceResource{
			BlobResourceContents: &acp.BlobResourceContents{URI: "file:///workspace/blob.bin", MIMEType: wire.Some("application/octet-stream"), Blob: "AAECAw=="},
		}}})},
		{AgentThoughtChunk: chunk(textBlock("Reading the file first."))},
		{AgentMessageChunk: chunk(acp.ContentBlock{Text: &acp.TextContent{
			Text: "Here is the summary.",
			Meta: harnMeta(&harn.ContentFields{VisibleText: ptr("Here is the summary."), VisibleDelta: ptr("Here is the summary.")}),
		}})},
		{ToolCall: &acp.ToolCall{
			ToolCallID: "call-1",
			Title:      "Read notes.txt",
			Kind:       wire.Some(acp.ToolKindRead),
			Status:     wire.Some(acp.ToolCallStatusPending),
			Locations:  wire.Some([]acp.ToolCallLocation{{Path: "/workspace/notes.txt", Line: wire.Some[int64](3)}}),
			RawInput:   jsontext.Value(`{"path":"/workspace/notes.txt"}`),
			Content:    wire.Some([]acp.ToolCallContent{{Content: &acp.Content{Content: textBlock("reading notes.txt")}}}),
			Meta: harnMeta(&harn.ToolLifecycle{
				Executor: &harn.ToolExecutor{Object: &harn.ToolExecutorObject{MCPServer: &harn.MCPServerExecutor{ServerName: "files"}}},
				Parsing:  ptr(false),
			}),
		}},
		{ToolCallUpdate: &acp.ToolCallUpdate{
			ToolCallID: "call-1",
			Status:     wire.Some(acp.ToolCallStatusCompleted),
			Content: wire.Some([]acp.ToolCallContent{
				{Diff: &acp.Diff{Path: "/workspace/notes.txt", OldText: wire.Some("draft\n"), NewText: "final\n"}},
				{Terminal: &acp.Terminal{TerminalID: "term-1"}},
			}),
			RawOutput: jsontext.Value(`{"bytes":42}`),
			Meta: harnMeta(&harn.ToolLifecycle{
				Executor:       &harn.ToolExecutor{String: ptr(harn.ToolExecutorNameHostBridge)},
				DurationMS:     ptr(12.0),
				MutationStatus: ptr(harn.MutationStatusApplied),
			}),
		}},
		{Plan: &acp.Plan{Entries: []acp.PlanEntry{
			{Content: "Read the file", Priority: acp.PlanEntryPriorityHigh, Status: acp.PlanEntryStatusCompleted},
			{Content: "Summarise it", Priority: acp.PlanEntryPriorityMedium, Status: acp.PlanEntryStatusInProgress},
			{Content: "Ask for a review", Priority: acp.PlanEntryPriorityLow, Status: acp.PlanEntryStatusPending},
		}}},
		{AvailableCommandsUpdate: &acp.AvailableCommandsUpdate{AvailableCommands: []acp.AvailableCommand{
			{Name: "test", Description: "Run the tests", Input: wire.Some(acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: "package path"}})},
			{Name: "lint", Description: "Run the linters"},
		}}},
		{CurrentModeUpdate: &acp.CurrentModeUpdate{CurrentModeID: "code"}},
		{ConfigOptionUpdate: &acp.ConfigOptionUpdate{ConfigOptions: []acp.SessionConfigOption{{
			ID:   "model",
			Name: "Model",
			Select: &acp.SessionConfigSelect{CurrentValue: "fast", Options: acp.SessionConfigSelectOptions{Ungrouped: []acp.SessionConfigSelectOption{
				{Value: "fast", Name: "Fast"},
				{Value: "deep", Name: "Deep", Description: wire.Some("Slower, more thorough")},
			}}},
		}}}},
		{SessionInfoUpdate: &acp.SessionInfoUpdate{Title: wire.Some("Interop tour"), UpdatedAt: wire.Some("2026-01-02T03:04:05Z")}},
	}
}

// The typed values the Go agent sends are exactly tour.json's documents,
// so both directions of the interop tour exchange the same updates.
func TestTourUpdatesEncodeToTheDocuments(t *testing.T) {
	docs := loadTour(t)
	updates := tourUpdates()
	if len(updates) != len(docs.Updates) {
		t.Fatalf("%d typed updates for %d documents", len(updates), len(docs.Updates))
	}
	kinds := map[string]bool{}
	for i, u := range updates {
		got, err := json.Marshal(u)
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if !sameJSON(t, got, docs.Updates[i]) {
			t.Errorf("update %d encodes as\n%s\nwant\n%s", i, got, docs.Updates[i])
		}
		var back acp.SessionUpdate
		if err := json.Unmarshal(docs.Updates[i], &back); err != nil || back.Unknown != nil {
			t.Errorf("update %d does not decode as a known variant: %v", i, err)
		}
		kinds[u.Tag()] = true
	}
	// Every SessionUpdate variant of the pinned schema is in the tour.
	want := []string{"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
		"plan", "available_commands_update", "current_mode_update", "config_option_update", "session_info_update"}
	for _, k := range want {
		if !kinds[k] {
			t.Errorf("the tour has no %s update", k)
		}
	}
	if len(kinds) != len(want) {
		t.Errorf("the tour has kinds %v, want exactly %v", kinds, want)
	}
	// Every ContentBlock and ToolCallContent variant appears too.
	blocks := map[string]bool{}
	for _, u := range updates {
		if c := u.UserMessageChunk; c != nil {
			tag := c.Content.Tag()
			if r := c.Content.Resource; r != nil && r.Resource.BlobResourceContents != nil {
				tag += "/blob"
			}
			blocks[tag] = true
		}
	}
	if len(blocks) != 6 {
		t.Errorf("content blocks in the tour: %v, want text, image, audio, resource_link and both resources", blocks)
	}
}

// checkTourUpdate asserts on the typed fields of the i-th tour update as a
// peer decoded it, beyond the structural comparison.
func checkTourUpdate(t *testing.T, i int, u acp.SessionUpdate) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("tour update %d (%s): "+format, append([]any{i, u.Tag()}, args...)...)
	}
	switch i {
	case 0:
		c := u.UserMessageChunk
		if c == nil || c.Content.Text == nil || c.Content.Text.Text != "Please summarise notes.txt" {
			fail("text %+v", c)
			return
		}
		a, ok := c.Content.Text.Annotations.Get()
		aud, _ := a.Audience.Get()
		prio, _ := a.Priority.Get()
		if !ok || len(aud) != 1 || aud[0] != acp.RoleUser || prio != 0.5 {
			fail("annotations %+v", a)
		}
	case 1:
		if img := u.UserMessageChunk.Content.Image; img == nil || img.MIMEType != "image/png" || img.Data != "iVBORw0KGgo=" {
			fail("image %+v", img)
		}
	case 2:
		if a := u.UserMessageChunk.Content.Audio; a == nil || a.MIMEType != "audio/wav" {
			fail("audio %+v", a)
		}
	case 3:
		l := u.UserMessageChunk.Content.ResourceLink
		if size, _ := l.Size.Get(); l == nil || l.URI != "file:///workspace/notes.txt" || size != 42 {
			fail("resource link %+v", l)
		}
	case 4:
		r := u.UserMessageChunk.Content.Resource
		if r == nil || r.Resource.TextResourceContents == nil || r.Resource.TextResourceContents.Text != "- ship it\n" {
			fail("text resource %+v", r)
		}
	case 5:
		r := u.UserMessageChunk.Content.Resource
		if r == nil || r.Resource.BlobResourceContents == nil || r.Resource.BlobResourceContents.Blob != "AAECAw==" {
			fail("blob resource %+v", r)
		}
	case 6:
		if c := u.AgentThoughtChunk; c == nil || c.Content.Text.Text != "Reading the file first." {
			fail("%+v", c)
		}
	case 7:
		c := u.AgentMessageChunk
		h, err := harn.ContentFieldsOf(c.Content.Text.Meta)
		if c.Content.Text.Text != "Here is the summary." || err != nil || h == nil || h.VisibleDelta == nil || *h.VisibleDelta != "Here is the summary." {
			fail("text %q meta %+v (%v)", c.Content.Text.Text, h, err)
		}
	case 8:
		c := u.ToolCall
		if c == nil {
			fail("no tool_call")
			return
		}
		kind, _ := c.Kind.Get()
		status, _ := c.Status.Get()
		locs, _ := c.Locations.Get()
		content, _ := c.Content.Get()
		if c.ToolCallID != "call-1" || kind != acp.ToolKindRead || status != acp.ToolCallStatusPending || len(locs) != 1 || len(content) != 1 {
			fail("%+v", c)
			return
		}
		line, _ := locs[0].Line.Get()
		h, err := harn.ToolLifecycleOf(c.Meta)
		if line != 3 || err != nil || h == nil || h.Executor.Object.MCPServer.ServerName != "files" || *h.Parsing {
			fail("line %d meta %+v (%v)", line, h, err)
		}
		if content[0].Content == nil || content[0].Content.Content.Text.Text != "reading notes.txt" {
			fail("content %+v", content)
		}
	case 9:
		c := u.ToolCallUpdate
		status, _ := c.Status.Get()
		content, _ := c.Content.Get()
		if status != acp.ToolCallStatusCompleted || len(content) != 2 || content[0].Diff == nil || content[1].Terminal.TerminalID != "term-1" {
			fail("status %s content %+v", status, content)
			return
		}
		if old, _ := content[0].Diff.OldText.Get(); old != "draft\n" || content[0].Diff.NewText != "final\n" {
			fail("diff %+v", content[0].Diff)
		}
		if h, err := harn.ToolLifecycleOf(c.Meta); err != nil || h == nil || *h.Executor.String != harn.ToolExecutorNameHostBridge || *h.DurationMS != 12 || *h.MutationStatus != harn.MutationStatusApplied {
			fail("harn meta %+v (%v)", h, err)
		}
	case 10:
		e := u.Plan.Entries
		if len(e) != 3 || e[0].Status != acp.PlanEntryStatusCompleted || e[1].Priority != acp.PlanEntryPriorityMedium || e[2].Content != "Ask for a review" {
			fail("%+v", e)
		}
	case 11:
		cmds := u.AvailableCommandsUpdate.AvailableCommands
		in, ok := cmds[0].Input.Get()
		if len(cmds) != 2 || !ok || in.Unstructured.Hint != "package path" || !cmds[1].Input.IsAbsent() {
			fail("%+v", cmds)
		}
	case 12:
		if u.CurrentModeUpdate.CurrentModeID != "code" {
			fail("%+v", u.CurrentModeUpdate)
		}
	case 13:
		o := u.ConfigOptionUpdate.ConfigOptions
		if len(o) != 1 || o[0].Select == nil || o[0].Select.CurrentValue != "fast" || len(o[0].Select.Options.Ungrouped) != 2 {
			fail("%+v", o)
		}
	case 14:
		title, _ := u.SessionInfoUpdate.Title.Get()
		if title != "Interop tour" {
			fail("%+v", u.SessionInfoUpdate)
		}
	default:
		fail("no such tour update")
	}
}

// harnMeta is a _meta holding Harn's v under harn (harn.SetMeta), for the
// tour's literals.
func harnMeta[M harn.MetaValue](v M) wire.Nullable[jsontext.Value] {
	var meta wire.Nullable[jsontext.Value]
	if err := harn.SetMeta(&meta, v); err != nil {
		panic(err)
	}
	return meta
}
