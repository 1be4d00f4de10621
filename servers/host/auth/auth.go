// Package auth chooses how an ACP client authenticates to an agent, from
// the authMethods the agent advertised in its initialize answer.
//
// An agent lists its methods by type: an "agent" method (no type) is one
// the agent carries out itself when the client calls authenticate with its
// id (a browser login, a gateway); an "env_var" method is satisfied by
// environment variables the agent reads (codex-acp's CODEX_API_KEY and
// OPENAI_API_KEY); a "terminal" method is an interactive run of the agent
// program with extra arguments, which the client performs instead of
// calling authenticate. [Methods] reads them, whatever this version of
// gen/acp types; [Choose] picks one:
//
//   - a method the user named ([Options.Method]) is used if the agent
//     offers it and, for env_var, its required variables are set, else
//     Choose fails;
//   - otherwise the first env_var method whose required variables are all
//     set is used;
//   - otherwise the first API-key method whose key variable is set (see
//     below);
//   - otherwise the first terminal method, when [Options.Terminal] allows
//     running one;
//   - otherwise nothing: the client goes on without authenticate, and when
//     the agent then answers auth_required (-32000) to any request,
//     [Required] turns that into a [*MissingError] that lists every method
//     and what each needs.
//
// Other agent methods are never chosen unasked: they may open a browser or
// wait for a person.
//
// # API keys
//
// An API-key method is an agent method whose _meta["api-key"] names the
// provider whose key it takes (codex-acp's "api-key", {"provider":
// "openai"}; gemini's "gemini-api-key", {"provider": "google"}). The agent
// reads the key from its own environment when authenticate carries none,
// which is how this package uses it: the key is never put in a payload.
// [KeyVars] names the variable each provider's key is read from
// (OPENAI_API_KEY, GEMINI_API_KEY, ANTHROPIC_API_KEY); the method is
// chosen when that variable is set in the environment the agent runs with
// ([Options.LookupEnv]: a host passes the agent only what its policy
// allows), and a missing key is reported by its variable's name.
//
// # Withheld variables
//
// A host that builds the agent's environment from an allow-list sets
// [Options.Withheld] to say which variables its own environment has and
// the agent does not get. A method whose variable is withheld is never
// chosen (the agent would not see it), and a [*MissingError] names the
// variable and says that the host's policy withholds it, rather than that
// it is not set.
//
// # Gateways
//
// A gateway method is an agent method whose _meta.gateway names the API a
// model gateway must speak (claude-agent-acp's "gateway",
// {"protocol":"anthropic"}): the client passes the gateway's base URL and
// headers in authenticate's _meta.gateway, and the agent sends its model
// requests there. An agent offers one only to a client that says it can
// ([Capabilities] sets clientCapabilities.auth._meta.gateway). With
// [Options.Gateway] set, Choose picks the gateway method (the first, or
// the one Options.Method names) before any other, and fails when the agent
// offers none: a client told to use a gateway must not let the agent
// reach its model another way. [Plan.Request] builds the authenticate
// request. Header values are secrets: [Gateway.Redactor] masks them.
package auth

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Method types.
const (
	TypeAgent    = "agent"
	TypeEnvVar   = "env_var"
	TypeTerminal = "terminal"
)

// Var is an environment variable an env_var method reads.
type Var struct {
	Name     string `json:"name"`
	Label    string `json:"label,omitempty"`
	Optional bool   `json:"optional,omitempty"`
	Secret   *bool  `json:"secret,omitempty"`
}

// Method is one advertised authentication method.
type Method struct {
	ID          acp.AuthMethodID
	Name        string
	Description string
	// Type is TypeAgent, TypeEnvVar, TypeTerminal, or a type this package
	// does not know (kept as sent; never chosen).
	Type string
	// Vars are an env_var method's variables.
	Vars []Var
	// Args and Env are a terminal method's extra arguments and variables.
	Args []string
	Env  map[string]string
	// Gateway says an agent method is a gateway method; GatewayProtocol
	// is the API the gateway must speak ("anthropic"), when it says.
	Gateway         bool
	GatewayProtocol string
	// APIKey says an agent method takes an API key (its _meta["api-key"]);
	// KeyProvider is the provider it names ("openai"), and KeyVars the
	// variables its key is read from (KeyVars[KeyProvider]; none for a
	// provider this package does not know).
	APIKey      bool
	KeyProvider string
	KeyVars     []string
	// Invalid says why the method cannot be used (its members do not fit
	// its type); "" when it can.
	Invalid string
}

// method is the JSON shape of every known variant.
type method struct {
	Type        string            `json:"type"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description *string           `json:"description"`
	Vars        []Var             `json:"vars"`
	Args        []string          `json:"args"`
	Env         map[string]string `json:"env"`
	Meta        jsontext.Value    `json:"_meta"`
}

// KeyVars names, for each provider an API-key method may name, the
// environment variables its agent reads the key from, in the order it
// tries them: those the provider's own SDK reads.
var KeyVars = map[string][]string{
	"anthropic": {"ANTHROPIC_API_KEY"},
	"google":    {"GEMINI_API_KEY"},
	"openai":    {"OPENAI_API_KEY"},
}

// apiKeyOf reads a method's _meta["api-key"]: whether it is there (an
// object) and the provider it names.
func apiKeyOf(meta jsontext.Value) (bool, string) {
	var m struct {
		APIKey *struct {
			Provider *string `json:"provider"`
		} `json:"api-key"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil || m.APIKey == nil {
		return false, ""
	}
	if m.APIKey.Provider == nil {
		return true, ""
	}
	return true, *m.APIKey.Provider
}

// gatewayOf reads a method's _meta.gateway: whether it is there (an
// object) and its protocol. A _meta of another shape makes no gateway
// method, and no invalid one.
func gatewayOf(meta jsontext.Value) (bool, string) {
	var m struct {
		Gateway *struct {
			Protocol *string `json:"protocol"`
		} `json:"gateway"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil || m.Gateway == nil {
		return false, ""
	}
	if m.Gateway.Protocol == nil {
		return true, ""
	}
	return true, *m.Gateway.Protocol
}

// Methods reads init's authMethods. It reads each method from its JSON
// form, so an env_var method that gen/acp keeps as an unknown variant is
// read as well as a typed one.
func Methods(init *acp.InitializeResponse) []Method {
	var out []Method
	for _, am := range init.GetAuthMethods() {
		raw, err := json.Marshal(&am)
		if err != nil {
			out = append(out, Method{Type: "unknown", Invalid: "it cannot be encoded: " + err.Error()})
			continue
		}
		var m method
		var invalid string
		if err := json.Unmarshal(raw, &m); err != nil {
			invalid = "its members do not fit its type: " + err.Error()
			// Keep what can be read of it, for the report.
			var head struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
			}
			_ = json.Unmarshal(raw, &head, json.RejectUnknownMembers(false))
			m = method{Type: head.Type, ID: head.ID, Name: head.Name}
		}
		if m.Type == "" {
			m.Type = TypeAgent
		}
		if m.Type == TypeEnvVar && invalid == "" {
			if len(m.Vars) == 0 {
				invalid = "it names no variable"
			}
			for _, v := range m.Vars {
				if v.Name == "" || strings.ContainsAny(v.Name, "=\x00") {
					invalid = fmt.Sprintf("variable name %q", v.Name)
				}
			}
		}
		mm := Method{ID: acp.AuthMethodID(m.ID), Name: m.Name, Type: m.Type, Vars: m.Vars, Args: m.Args, Env: m.Env, Invalid: invalid}
		if m.Type == TypeAgent {
			mm.Gateway, mm.GatewayProtocol = gatewayOf(m.Meta)
			if !mm.Gateway {
				mm.APIKey, mm.KeyProvider = apiKeyOf(m.Meta)
				mm.KeyVars = slices.Clone(KeyVars[mm.KeyProvider])
			}
		}
		if m.Description != nil {
			mm.Description = *m.Description
		}
		out = append(out, mm)
	}
	return out
}

// Missing returns the names of m's required variables that lookup does
// not find set (to a non-empty value). An API-key method needs one of its
// KeyVars: all of them when none is set.
func (m *Method) Missing(lookup func(string) (string, bool)) []string {
	var out []string
	if m.APIKey {
		for _, name := range m.KeyVars {
			if val, ok := lookup(name); ok && val != "" {
				return nil
			}
		}
		return slices.Clone(m.KeyVars)
	}
	for _, v := range m.Vars {
		if val, ok := lookup(v.Name); !v.Optional && (!ok || val == "") {
			out = append(out, v.Name)
		}
	}
	return out
}

// Needs describes what m needs, for a person: "set CODEX_API_KEY", "run
// the agent with --login in a terminal", "the agent's own login".
func (m *Method) Needs() string {
	switch m.Type {
	case TypeEnvVar:
		var names []string
		for _, v := range m.Vars {
			n := v.Name
			if v.Optional {
				n += " (optional)"
			}
			names = append(names, n)
		}
		return "set " + strings.Join(names, ", ")
	case TypeTerminal:
		if len(m.Args) == 0 {
			return "an interactive run of the agent in a terminal"
		}
		return "an interactive run of the agent with " + strings.Join(m.Args, " ") + " in a terminal"
	case TypeAgent:
		if m.Gateway {
			p := ""
			if m.GatewayProtocol != "" {
				p = " speaking " + m.GatewayProtocol
			}
			return "a model gateway" + p + " (its base URL and headers), through authenticate"
		}
		if m.APIKey {
			provider := m.KeyProvider
			if provider == "" {
				provider = "its provider"
			}
			if len(m.KeyVars) == 0 {
				return "an API key for " + provider + " in the agent's environment (this client does not know its variable), through authenticate"
			}
			return "an API key for " + provider + " in " + strings.Join(m.KeyVars, " or ") + " (read by the agent from its environment), through authenticate"
		}
		return "the agent's own login, through authenticate"
	}
	return "a method of type " + m.Type + ", which this client does not know"
}

// Options steer Choose. The zero value picks automatically and never runs
// a terminal method.
type Options struct {
	// Method is the method the user chose; "" lets Choose pick.
	Method acp.AuthMethodID
	// Terminal allows running a terminal method.
	Terminal bool
	// LookupEnv reads the environment the agent runs with (what the host
	// passes it, under its policy: an env_var or API-key method is chosen
	// only when the agent will see its variables); nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Gateway, when set, is the model gateway to authenticate with, with
	// a gateway method (see the package documentation).
	Gateway *Gateway
	// Withheld reports a variable that is set in the host's environment
	// but that the host does not pass the agent (its policy does not
	// allow it); nil: none is. It only changes what a *MissingError
	// says: LookupEnv already does not find such a variable.
	Withheld func(name string) bool
}

// withheld returns the variables of methods (an env_var method's, an
// API-key method's key variables) that o.Withheld reports, each once, in
// the order the methods name them.
func (o Options) withheld(methods []Method) []string {
	if o.Withheld == nil {
		return nil
	}
	var out []string
	for i := range methods {
		for _, name := range methods[i].varNames() {
			if !slices.Contains(out, name) && o.Withheld(name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// varNames are the variables m reads: an env_var method's, or an API-key
// method's key variables.
func (m *Method) varNames() []string {
	if m.APIKey {
		return m.KeyVars
	}
	names := make([]string, 0, len(m.Vars))
	for _, v := range m.Vars {
		names = append(names, v.Name)
	}
	return names
}

// Gateway is a model gateway: the base URL the agent sends its model
// requests to, and the headers each carries (credentials: secrets).
type Gateway struct {
	BaseURL string
	Headers map[string]string
	// Protocol is the API the gateway speaks, as gateway methods name it
	// in _meta.gateway.protocol ("anthropic", "openai", "google",
	// "bedrock"); "" fits an agent whose gateway methods all speak one.
	Protocol string
}

// Validate reports whether g can be passed to an agent: an absolute http
// or https base URL, header names that are HTTP tokens, and values
// without control characters (claude-agent-acp joins the headers into
// one "Name: value" per line: a line break in a value would add a header).
// Its errors never quote a header value.
func (g *Gateway) Validate() error {
	u, err := url.Parse(g.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("auth: gateway base URL %q is not an absolute http or https URL", redactURL(g.BaseURL))
	}
	for _, name := range sortedKeys(g.Headers) {
		if name == "" || strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) }) >= 0 {
			return fmt.Errorf("auth: gateway header name %q is not an HTTP token", name)
		}
		if strings.ContainsFunc(g.Headers[name], func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return fmt.Errorf("auth: gateway header %s: its value holds a control character (a line break would add a header)", name)
		}
	}
	return nil
}

// redactURL is u with any password masked, for a message.
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return "(unparsable)"
}

// Redactor masks g's header values (and the password of its URL), for
// every log line and error that could quote them.
func (g *Gateway) Redactor() *redact.Redactor {
	r := redact.New()
	if g == nil {
		return r
	}
	for _, v := range g.Headers {
		r.Add(v)
	}
	if u, err := url.Parse(g.BaseURL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			r.Add(p)
		}
	}
	return r
}

// Capabilities returns caps (nil: none) with what o lets the agent offer:
// clientCapabilities.auth._meta.gateway when o.Gateway is set, and
// clientCapabilities.auth.terminal when o.Terminal is. caps is not changed.
func Capabilities(caps *acp.ClientCapabilities, o Options) *acp.ClientCapabilities {
	var c acp.ClientCapabilities
	if caps != nil {
		c = *caps
	}
	if o.Gateway == nil && !o.Terminal {
		return &c
	}
	var a acp.AuthCapabilities
	if c.Auth != nil {
		a = *c.Auth
	}
	if o.Terminal {
		yes := true
		a.Terminal = &yes
	}
	if o.Gateway != nil {
		meta, _ := a.Meta.Get()
		meta.Gateway = wire.Some(true)
		a.Meta = wire.Some(meta)
	}
	c.Auth = &a
	return &c
}

// Action is what a Plan asks of the client.
type Action int

const (
	// None: go on without authenticating.
	None Action = iota
	// Authenticate: call authenticate with the Plan's method.
	Authenticate
	// RunTerminal: run the agent program interactively with the method's
	// Args and Env (TerminalCommand), then go on; ACP says not to pass a
	// terminal method to authenticate.
	RunTerminal
)

// Plan is Choose's answer.
type Plan struct {
	Action Action
	Method *Method // nil for None
}

// Errors of Choose and Required.
var (
	// ErrUnknownMethod: the chosen method is not one the agent offers.
	ErrUnknownMethod = errors.New("auth: the agent offers no such method")
	// ErrMissing: a credential the agent needs is not there (*MissingError).
	ErrMissing = errors.New("auth: credential missing")
	// ErrUnusable: the chosen method cannot be used (invalid, unknown type,
	// or a terminal method that Options.Terminal does not allow).
	ErrUnusable = errors.New("auth: method cannot be used")
)

// MissingError reports a missing credential with every method the agent
// offers and what each needs. It matches ErrMissing.
type MissingError struct {
	// Method is the method chosen, or nil when none was.
	Method *Method
	// Unset are the chosen method's required variables that the agent's
	// environment lacks (Options.LookupEnv).
	Unset []string
	// Withheld are the variables of Methods that the host's environment
	// has and that it does not pass the agent (Options.Withheld).
	Withheld []string
	// Methods are all the agent's methods.
	Methods []Method
	// Err is the agent's error, when it asked for authentication.
	Err error
}

func (e *MissingError) Error() string {
	var b strings.Builder
	var withheld, unset []string
	for _, name := range e.Unset {
		if slices.Contains(e.Withheld, name) {
			withheld = append(withheld, name)
		} else {
			unset = append(unset, name)
		}
	}
	switch {
	case e.Method != nil && len(withheld) > 0:
		sep := " and " // an env_var method needs them all
		if e.Method.APIKey {
			sep = " or " // an API-key method one of them
		}
		fmt.Fprintf(&b, "authentication method %q needs %s, which the host's policy withholds from the agent (it is set in the host's environment)", e.Method.ID, strings.Join(withheld, sep))
		if len(unset) > 0 {
			fmt.Fprintf(&b, ",%s%s, which is not set", sep, strings.Join(unset, sep))
		}
	case e.Method != nil && len(e.Unset) > 0 && e.Method.APIKey && len(e.Unset) > 1:
		fmt.Fprintf(&b, "authentication method %q needs one of %s, none of which is set", e.Method.ID, strings.Join(e.Unset, ", "))
	case e.Method != nil && len(e.Unset) > 0:
		fmt.Fprintf(&b, "authentication method %q needs %s, which is not set", e.Method.ID, strings.Join(e.Unset, ", "))
	case e.Err != nil:
		b.WriteString("the agent requires authentication (" + e.Err.Error() + ")")
	default:
		b.WriteString("no credential for the agent")
	}
	b.WriteString(describe(e.Methods, e.Withheld))
	return b.String()
}

// Is matches ErrMissing.
func (e *MissingError) Is(target error) bool { return target == ErrMissing }

// Unwrap returns the agent's error.
func (e *MissingError) Unwrap() error { return e.Err }

// Describe lists methods and what each needs, one per line after a colon
// (or says the agent offers none).
func Describe(methods []Method) string { return describe(methods, nil) }

// describe is Describe, which also says of each method which of its
// variables in withheld the host's policy withholds from the agent.
func describe(methods []Method, withheld []string) string {
	if len(methods) == 0 {
		return "; the agent advertises no authentication method"
	}
	var b strings.Builder
	b.WriteString("; the agent's methods:")
	for _, m := range methods {
		fmt.Fprintf(&b, "\n  %s (%s): %s", m.ID, m.Type, m.Needs())
		if m.Name != "" && m.Name != string(m.ID) {
			fmt.Fprintf(&b, " [%s]", m.Name)
		}
		if m.Invalid != "" {
			fmt.Fprintf(&b, " (unusable: %s)", m.Invalid)
		}
		var held []string
		for _, name := range m.varNames() {
			if slices.Contains(withheld, name) {
				held = append(held, name)
			}
		}
		if len(held) > 0 {
			fmt.Fprintf(&b, "; %s is set in the host's environment, and the host's policy withholds it from the agent", strings.Join(held, " and "))
		}
	}
	return b.String()
}

// Request is the authenticate request that carries p out: its method's
// id and, for a gateway method, o.Gateway in _meta.gateway.
func (p Plan) Request(o Options) *acp.AuthenticateRequest {
	req := &acp.AuthenticateRequest{}
	if p.Method == nil {
		return req
	}
	req.MethodID = p.Method.ID
	if p.Method.Gateway && o.Gateway != nil {
		headers := map[string]string{}
		for k, v := range o.Gateway.Headers {
			headers[k] = v
		}
		req.Meta = wire.Some(acp.AuthenticateRequestMeta{Gateway: &acp.GatewayAuth{BaseURL: o.Gateway.BaseURL, Headers: headers}})
	}
	return req
}

// Choose picks how to authenticate (see the package documentation).
func Choose(methods []Method, o Options) (Plan, error) {
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if o.Gateway != nil {
		if err := o.Gateway.Validate(); err != nil {
			return Plan{}, fmt.Errorf("%w: %w", ErrUnusable, err)
		}
		if o.Method == "" {
			return chooseGateway(methods, o.Gateway.Protocol)
		}
	}
	if o.Method != "" {
		i := slices.IndexFunc(methods, func(m Method) bool { return m.ID == o.Method })
		if i < 0 {
			return Plan{}, fmt.Errorf("%w: %q%s", ErrUnknownMethod, o.Method, Describe(methods))
		}
		m := &methods[i]
		switch {
		case m.Invalid != "":
			return Plan{}, fmt.Errorf("%w: %q: %s", ErrUnusable, m.ID, m.Invalid)
		case o.Gateway != nil && !m.Gateway:
			return Plan{}, fmt.Errorf("%w: a gateway is configured, and %q is not a gateway method", ErrUnusable, m.ID)
		case o.Gateway != nil && o.Gateway.Protocol != "" && m.GatewayProtocol != "" && m.GatewayProtocol != o.Gateway.Protocol:
			return Plan{}, fmt.Errorf("%w: %q is a gateway method for %s, and the gateway speaks %s", ErrUnusable, m.ID, m.GatewayProtocol, o.Gateway.Protocol)
		case m.APIKey && len(m.KeyVars) > 0:
			if unset := m.Missing(lookup); len(unset) > 0 {
				return Plan{}, &MissingError{Method: m, Unset: unset, Withheld: o.withheld(methods), Methods: methods}
			}
			return Plan{Authenticate, m}, nil
		case m.Type == TypeEnvVar:
			if unset := m.Missing(lookup); len(unset) > 0 {
				return Plan{}, &MissingError{Method: m, Unset: unset, Withheld: o.withheld(methods), Methods: methods}
			}
			return Plan{Authenticate, m}, nil
		case m.Type == TypeTerminal && !o.Terminal:
			return Plan{}, fmt.Errorf("%w: %q is a terminal method, and running one was not allowed", ErrUnusable, m.ID)
		case m.Type == TypeTerminal:
			return Plan{RunTerminal, m}, nil
		case m.Type == TypeAgent && m.Gateway && o.Gateway == nil:
			return Plan{}, fmt.Errorf("%w: %q is a gateway method, and no gateway was given", ErrUnusable, m.ID)
		case m.Type == TypeAgent:
			return Plan{Authenticate, m}, nil
		}
		return Plan{}, fmt.Errorf("%w: %q has type %q, which this client does not know", ErrUnusable, m.ID, m.Type)
	}
	for i := range methods {
		if m := &methods[i]; m.Type == TypeEnvVar && m.Invalid == "" && len(m.Missing(lookup)) == 0 {
			return Plan{Authenticate, m}, nil
		}
	}
	for i := range methods {
		if m := &methods[i]; m.APIKey && m.Invalid == "" && len(m.KeyVars) > 0 && len(m.Missing(lookup)) == 0 {
			return Plan{Authenticate, m}, nil
		}
	}
	if o.Terminal {
		for i := range methods {
			if m := &methods[i]; m.Type == TypeTerminal && m.Invalid == "" {
				return Plan{RunTerminal, m}, nil
			}
		}
	}
	return Plan{}, nil
}

// chooseGateway picks the gateway method for a gateway speaking protocol:
// the one whose protocol it is; with protocol "", the one gateway method,
// or the first of several that all speak one protocol (or say none).
func chooseGateway(methods []Method, protocol string) (Plan, error) {
	var usable []*Method
	protocols := map[string]bool{}
	for i := range methods {
		if m := &methods[i]; m.Gateway && m.Invalid == "" {
			usable = append(usable, m)
			protocols[m.GatewayProtocol] = true
		}
	}
	if len(usable) == 0 {
		return Plan{}, fmt.Errorf("%w: a gateway is configured, but the agent offers no gateway method (did initialize say the client supports one?)%s", ErrUnusable, Describe(methods))
	}
	if protocol == "" {
		if len(protocols) > 1 {
			return Plan{}, fmt.Errorf("%w: the agent offers gateway methods for several APIs; say which one the gateway speaks%s", ErrUnusable, Describe(methods))
		}
		return Plan{Authenticate, usable[0]}, nil
	}
	for _, m := range usable {
		if m.GatewayProtocol == protocol {
			return Plan{Authenticate, m}, nil
		}
	}
	return Plan{}, fmt.Errorf("%w: the gateway speaks %s, and the agent offers no gateway method for it%s", ErrUnusable, protocol, Describe(methods))
}

// Required turns an agent's auth_required error (-32000) into a
// *MissingError listing methods, and the variables of theirs that o's
// host withholds from the agent (Options.Withheld); any other error is
// returned as it is.
func Required(err error, methods []Method, o Options) error {
	var rerr *rpc.Error
	if errors.As(err, &rerr) && rerr.Code == int64(acp.ErrorCodeAuthenticationRequired) {
		return &MissingError{Methods: methods, Withheld: o.withheld(methods), Err: err}
	}
	return err
}

// TerminalCommand is the interactive run of a terminal method: the agent
// program argv with m's Args appended, in environ with m's Env set over
// it. The caller connects it to the terminal and waits for it.
func TerminalCommand(m *Method, argv, environ []string) (*exec.Cmd, error) {
	if m == nil || m.Type != TypeTerminal {
		return nil, fmt.Errorf("%w: not a terminal method", ErrUnusable)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: no agent command", ErrUnusable)
	}
	cmd := exec.Command(argv[0], slices.Concat(argv[1:], m.Args)...)
	env := slices.Clone(environ)
	for _, k := range sortedKeys(m.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("%w: %q: variable name %q", ErrUnusable, m.ID, k)
		}
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
		env = append(env, k+"="+m.Env[k])
	}
	cmd.Env = env
	return cmd, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
