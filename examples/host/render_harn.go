package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
)

// harnText renders a Harn variant from its typed fields; ok is false when
// it has none to show (session_rollback and session_redo, whose members
// Harn does not pin, and a worker_update with neither shape), rendered
// generically then.
func (r *renderer) harnText(u *harn.SessionUpdate) (string, bool) {
	switch {
	case u.Progress != nil:
		return progressText(&u.Progress.Meta.Harn), true
	case u.Log != nil:
		return logText(&u.Log.Meta.Harn), true
	case u.WorkerUpdate != nil:
		w := u.WorkerUpdate
		if w.Meta == nil { // the legacy duplicate, fields under content
			if c := w.Content; c != nil {
				return join(str(c.WorkerName), "("+str(c.WorkerID)+")", "->", r.status(str(c.Status)), "(legacy)"), true
			}
			return "", false
		}
		h := &w.Meta.Harn
		event, status := "", ""
		if h.Event != nil {
			event = string(*h.Event)
		}
		if h.Status != nil {
			status = string(*h.Status)
		}
		return join(str(h.WorkerName), "("+str(h.WorkerID)+")", clean(event), "->", r.status(status), strconv.Quote(cleanLine(str(h.WorkerTask)))), true
	case u.SkillActivated != nil:
		h := &u.SkillActivated.Meta.Harn
		return join(clean(h.SkillName), iteration(h.Iteration), cleanLine(str(h.Reason))), true
	case u.SkillDeactivated != nil:
		h := &u.SkillDeactivated.Meta.Harn
		return join(clean(h.SkillName), iteration(h.Iteration)), true
	case u.SkillScopeTools != nil:
		h := &u.SkillScopeTools.Meta.Harn
		return clean(h.SkillName) + ": " + cleanLine(strings.Join(h.AllowedTools, ", ")), true
	case u.Artifact != nil:
		h := &u.Artifact.Meta.Harn
		return join(strconv.Quote(cleanLine(str(h.Title))), clean(str(h.Kind)), clean(str(h.MIMEType)), clean(str(h.ArtifactID))), true
	case u.ReminderEmitted != nil:
		rem := &u.ReminderEmitted.Meta.Harn.Reminder
		return join(clean(rem.ReminderID), strconv.Quote(truncate(cleanLine(rem.Body), 100)), cleanLine(strings.Join(rem.Tags, ", "))), true
	case u.HITLRequest != nil:
		h := &u.HITLRequest.Meta.Harn
		kind := ""
		if h.Kind != nil {
			kind = string(*h.Kind)
		}
		return join(clean(kind), clean(str(h.RequestID))), true
	case u.HITLResolved != nil:
		h := &u.HITLResolved.Meta.Harn
		return join(clean(str(h.Kind)), clean(str(h.RequestID)), clean(str(h.Outcome))), true
	case u.UserMessage != nil:
		m := u.UserMessage
		var text string
		switch {
		case m.Content.String != nil:
			text = cleanLine(*m.Content.String)
		default:
			var parts []string
			for _, b := range m.Content.List {
				parts = append(parts, contentBlock(b))
			}
			text = strings.Join(parts, " ")
		}
		return join(clean(m.MessageID), truncate(text, 120)), true
	case u.LiveSessionClient != nil:
		h := &u.LiveSessionClient.Meta.Harn
		who := "(gone)"
		if c := h.State.Client; c != nil {
			who = clean(c.ClientID) + " " + clean(string(c.Mode))
		}
		controller := "none"
		if id := h.State.ActiveControllerID; id != nil {
			controller = clean(*id)
		}
		return join(clean(string(h.Action)), who, fmt.Sprintf("(controller %s, %d clients)", controller, len(h.State.Clients))), true
	case u.FsWatch != nil:
		return fsWatchText(&u.FsWatch.Meta.Harn), true
	case u.TranscriptCompacted != nil:
		return compactedText(&u.TranscriptCompacted.Meta.Harn), true
	case u.TranscriptProjected != nil:
		return projectedText(&u.TranscriptProjected.Meta.Harn), true
	case u.Handoff != nil:
		return handoffText(&u.Handoff.Meta.Harn), true
	case u.SkillNarrow != nil:
		h := &u.SkillNarrow.Meta.Harn
		return join(cleanLine(str(h.Reason)), names("removed", h.RemovedTools), names("remaining", h.RemainingTools)), true
	case u.ToolSearchQuery != nil:
		h := &u.ToolSearchQuery.Meta.Harn
		return join(clean(str(h.Name)), labelled("query", truncate(scalarText(h.Query), 80)), searchHow(h.Strategy, h.Mode), clean(str(h.ToolUseID))), true
	case u.ToolSearchResult != nil:
		h := &u.ToolSearchResult.Meta.Harn
		promoted := make([]string, 0, len(h.Promoted))
		for _, p := range h.Promoted {
			promoted = append(promoted, truncate(scalarText(p), 40))
		}
		return join(names("promoted", promoted), searchHow(h.Strategy, h.Mode), clean(str(h.ToolUseID))), true
	case u.StanceTransition != nil:
		h := &u.StanceTransition.Meta.Harn
		why := cleanLine(str(h.Justification))
		if why == "" {
			why = cleanLine(str(h.Reason))
		}
		return join(clean(str(h.Phase)), labelled("escape", clean(str(h.EscapeTool))), names("allowed", h.AllowedTools), truncate(why, 80)), true
	case u.SessionTruncated != nil:
		t := u.SessionTruncated
		text := fmt.Sprintf("kept %d turns, removed %d", t.KeptTurnCount, t.RemovedTurnCount)
		if tip, ok := t.NewTipTurnID.Get(); ok {
			text += ", tip " + clean(tip)
		}
		return join(text, cleanLine(str(t.Reason))), true
	case u.CallStart != nil:
		c := u.CallStart.Content
		if c == nil {
			return "", false
		}
		return join(clean(str(c.Name)), paren(clean(str(c.CallType))), clean(str(c.ToolCallID))), true
	case u.CallProgress != nil:
		c := u.CallProgress.Content
		if c == nil {
			return "", false
		}
		delta := str(c.VisibleDelta)
		if delta == "" {
			delta = str(c.Delta)
		}
		tokens := ""
		if c.AccumulatedTokens != nil {
			tokens = strconv.FormatInt(*c.AccumulatedTokens, 10) + " tokens"
		}
		return join(clean(str(c.ToolCallID)), strconv.Quote(truncate(cleanLine(delta), 80)), tokens), true
	case u.CallEnd != nil:
		c := u.CallEnd.Content
		if c == nil {
			return "", false
		}
		took := ""
		if c.DurationMS != nil {
			took = strconv.FormatInt(*c.DurationMS, 10) + "ms"
		}
		return join(clean(str(c.Name)), clean(str(c.ToolCallID)), "->", r.status(str(c.Status)), took), true
	}
	return "", false
}

// progressText renders a progress report: phase, message, progress/total.
func progressText(p *harn.Progress) string {
	text := join(clean(p.Phase)+":", cleanLine(p.Message))
	if p.Progress != nil {
		done := strconv.FormatInt(*p.Progress, 10)
		if p.Total != nil {
			done += "/" + strconv.FormatInt(*p.Total, 10)
		}
		text += " (" + done + ")"
	}
	return text
}

// logText renders a log line: [level] message.
func logText(l *harn.Log) string {
	return "[" + clean(string(l.Level)) + "] " + cleanLine(l.Message)
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func iteration(n *int64) string {
	if n == nil {
		return ""
	}
	return "iteration " + strconv.FormatInt(*n, 10)
}

// fsWatchText renders a watch's events: kind and paths (relative ones when
// given), and an error.
func fsWatchText(h *harn.FsWatch) string {
	var events []string
	for _, e := range h.Events {
		paths := e.RelativePaths
		if len(paths) == 0 {
			paths = e.Paths
		}
		ev := join(clean(str(e.Kind)), cleanLine(strings.Join(paths, " ")))
		if msg, ok := e.Error.Get(); ok {
			ev = join(ev, "error "+strconv.Quote(truncate(cleanLine(msg), 60)))
		}
		events = append(events, ev)
	}
	return join(clean(str(h.SubscriptionID))+":", strings.Join(events, "; "))
}

// compactedText renders a compaction: how, what was archived, and the
// estimated tokens before and after. Harn pins none of these members'
// types: each is shown as the value it is.
func compactedText(h *harn.TranscriptCompacted) string {
	var out []string
	if n := truncate(scalarText(h.ArchivedMessages), 20); n != "" {
		out = append(out, "archived "+n+" messages")
	}
	before, after := truncate(scalarText(h.EstimatedTokensBefore), 20), truncate(scalarText(h.EstimatedTokensAfter), 20)
	if before != "" && after != "" {
		out = append(out, "tokens "+before+" -> "+after)
	}
	if id := truncate(scalarText(h.SnapshotAssetID), 60); id != "" {
		out = append(out, "snapshot "+id)
	}
	return join(paren(strings.Join(nonEmpty(truncate(scalarText(h.Strategy), 40), truncate(scalarText(h.Mode), 40)), ", ")), strings.Join(out, ", "), truncate(scalarText(h.Reason), 60))
}

// projectedText renders a projection: messages kept and dropped, what was
// redacted and reclaimed, under which policy.
func projectedText(h *harn.TranscriptProjected) string {
	var out []string
	for _, c := range []struct {
		what string
		n    jsontext.Value
	}{{"kept", h.KeptCount}, {"dropped", h.DroppedCount}, {"redacted", h.RedactedCount}, {"reclaimed tokens", h.ReclaimedTokens}} {
		if n := truncate(scalarText(c.n), 20); n != "" {
			out = append(out, c.what+" "+n)
		}
	}
	return join(strings.Join(out, ", "), labelled("policy", truncate(scalarText(h.Policy), 40)), truncate(scalarText(h.Reason), 60))
}

// nonEmpty drops the empty strings of list.
func nonEmpty(list ...string) []string {
	var out []string
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// handoffText renders a handoff: its ids, and the task and target of the
// handoff_artifact record when it has them.
func handoffText(h *harn.Handoff) string {
	var rec struct {
		Task   string `json:"task"`
		Target struct {
			Label string `json:"label"`
		} `json:"target_persona_or_human"`
	}
	_ = json.Unmarshal(h.Handoff, &rec)
	task := ""
	if rec.Task != "" {
		task = strconv.Quote(truncate(cleanLine(rec.Task), 80))
	}
	return join(clean(str(h.HandoffID)), labelled("to", clean(rec.Target.Label)), task, labelled("artifact", clean(str(h.ArtifactID))))
}

// names renders "what a, b" (nothing for no names).
func names(what string, list []string) string {
	if len(list) == 0 {
		return ""
	}
	return what + " " + cleanLine(strings.Join(list, ", "))
}

// labelled renders "label value" (nothing for no value).
func labelled(label, value string) string {
	if value == "" {
		return ""
	}
	return label + " " + value
}

// paren renders "(s)" (nothing for no s).
func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// searchHow renders "(strategy, mode)" of a search or a compaction.
func searchHow(strategy, mode *string) string {
	var out []string
	for _, s := range []*string{strategy, mode} {
		if v := clean(str(s)); v != "" {
			out = append(out, v)
		}
	}
	return paren(strings.Join(out, ", "))
}
