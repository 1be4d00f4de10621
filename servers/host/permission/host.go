package permission

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/bridgekit/bridgekit/gen/acp"
)

// Host answers session/request_permission for a host that decides by
// policy, at once: Policy decides the request merged with what Tracker
// kept of its tool call (feed Tracker every session/update). It fails
// closed: anything but an allow, a panic included, is Answer's denial;
// after Cancel every request is answered cancelled, as ACP requires after
// session/cancel. It remembers the last request it denied (LastDenied),
// so that a client can tell a turn the agent ends cancelled because of a
// denial (codex-acp's only reject option aborts the turn) from a
// spontaneous one. Set its fields before use; its methods are safe for
// concurrent use.
type Host struct {
	Policy  *Policy
	Tracker *Tracker
	// Observe, when set, is told each request, the call decided (nil when
	// building it failed), the verdict and the answer.
	Observe func(req *acp.RequestPermissionRequest, c *Call, v Verdict, res *acp.RequestPermissionResponse)
	// Logger receives a panic while deciding; nil is slog.Default().
	Logger *slog.Logger
	// HarnPeer reports whether the agent advertised Harn's extension
	// contract: only then does a denial carry the root "reason" member
	// (ForPeer). Nil means it did not: a plain ACP agent gets nothing
	// ACP does not define.
	HarnPeer func() bool

	cancelled atomic.Bool
	denied    atomic.Pointer[string]
}

// Reasons of a Host's own answers.
const (
	ReasonCancelling = "the prompt is being cancelled"
	ReasonHostFailed = "the host failed to decide"
)

// Handle has the type of acp.ClientHandlers.SessionRequestPermission and
// never returns an error.
func (h *Host) Handle(_ context.Context, req *acp.RequestPermissionRequest) (res *acp.RequestPermissionResponse, err error) {
	v := Verdict{Reason: ReasonHostFailed}
	var c *Call
	defer func() {
		if rec := recover(); rec != nil {
			log := h.Logger
			if log == nil {
				log = slog.Default()
			}
			log.Error("permission: panic while deciding; denying", "panic", fmt.Sprint(rec))
			v = Verdict{Reason: fmt.Sprint(ReasonHostFailed+": ", rec)}
			res, err = Answer(req, v.Decision()), nil
		}
		if !v.Allow && !h.cancelled.Load() {
			what := "a tool call"
			if c != nil {
				what = strconv.Quote(c.Tool)
				if c.Kind != "" {
					what += " (" + string(c.Kind) + ")"
				}
			}
			h.denied.Store(&what)
		}
		res = ForPeer(res, h.HarnPeer != nil && h.HarnPeer())
		if h.Observe != nil {
			h.Observe(req, c, v, res)
		}
	}()
	c = NewCall(h.Tracker, req, h.Policy.MaxPaths)
	if h.cancelled.Load() {
		v = Verdict{Reason: ReasonCancelling}
		return Cancelled(), nil
	}
	v = h.Policy.Decide(c)
	d := v.Decision()
	if d.Allow {
		d.OptionID, _ = GrantOption(req)
	}
	return Answer(req, d), nil
}

// Cancel makes every later request answered cancelled.
func (h *Host) Cancel() { h.cancelled.Store(true) }

// LastDenied describes the last request denied other than after Cancel
// (`"tool" (kind)`, quoted as Go quotes), or "" for none.
func (h *Host) LastDenied() string {
	if p := h.denied.Load(); p != nil {
		return *p
	}
	return ""
}
