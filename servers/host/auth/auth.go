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
//   - otherwise the first terminal method, when [Options.Terminal] allows
//     running one;
//   - otherwise nothing: the client goes on without authenticate, and when
//     the agent then answers auth_required (-32000), [Required] turns that
//     into a [*MissingError] that lists every method and the variables
//     each needs.
//
// Agent methods are never chosen unasked: they may open a browser or wait
// for a person.
package auth

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
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
		if m.Description != nil {
			mm.Description = *m.Description
		}
		out = append(out, mm)
	}
	return out
}

// Missing returns the names of m's required variables that lookup does
// not find set (to a non-empty value).
func (m *Method) Missing(lookup func(string) (string, bool)) []string {
	var out []string
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
	// LookupEnv reads the environment the agent runs with; nil is
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
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
	// Unset are the chosen method's required variables that are not set.
	Unset []string
	// Methods are all the agent's methods.
	Methods []Method
	// Err is the agent's error, when it asked for authentication.
	Err error
}

func (e *MissingError) Error() string {
	var b strings.Builder
	switch {
	case e.Method != nil && len(e.Unset) > 0:
		fmt.Fprintf(&b, "authentication method %q needs %s, which is not set", e.Method.ID, strings.Join(e.Unset, ", "))
	case e.Err != nil:
		b.WriteString("the agent requires authentication (" + e.Err.Error() + ")")
	default:
		b.WriteString("no credential for the agent")
	}
	b.WriteString(Describe(e.Methods))
	return b.String()
}

// Is matches ErrMissing.
func (e *MissingError) Is(target error) bool { return target == ErrMissing }

// Unwrap returns the agent's error.
func (e *MissingError) Unwrap() error { return e.Err }

// Describe lists methods and what each needs, one per line after a colon
// (or says the agent offers none).
func Describe(methods []Method) string {
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
	}
	return b.String()
}

// Choose picks how to authenticate (see the package documentation).
func Choose(methods []Method, o Options) (Plan, error) {
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
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
		case m.Type == TypeEnvVar:
			if unset := m.Missing(lookup); len(unset) > 0 {
				return Plan{}, &MissingError{Method: m, Unset: unset, Methods: methods}
			}
			return Plan{Authenticate, m}, nil
		case m.Type == TypeTerminal && !o.Terminal:
			return Plan{}, fmt.Errorf("%w: %q is a terminal method, and running one was not allowed", ErrUnusable, m.ID)
		case m.Type == TypeTerminal:
			return Plan{RunTerminal, m}, nil
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
	if o.Terminal {
		for i := range methods {
			if m := &methods[i]; m.Type == TypeTerminal && m.Invalid == "" {
				return Plan{RunTerminal, m}, nil
			}
		}
	}
	return Plan{}, nil
}

// Required turns an agent's auth_required error (-32000) into a
// *MissingError listing methods; any other error is returned as it is.
func Required(err error, methods []Method) error {
	var rerr *rpc.Error
	if errors.As(err, &rerr) && rerr.Code == int64(acp.ErrorCodeAuthenticationRequired) {
		return &MissingError{Methods: methods, Err: err}
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
