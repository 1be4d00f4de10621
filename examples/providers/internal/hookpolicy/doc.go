// Package hookpolicy is the engine of the example hook provider: it
// decides hook invocations — continue or reject — from a policy file, with
// typed reasons, and builds the typed patch a continuing hook may return.
//
// # Policy files
//
// A policy is JSON (unknown members are errors, so a misspelt condition
// cannot silently match everything):
//
//	{
//	  "default": {"decision": "continue"},
//	  "rules": [
//	    {"id": "no-secret-files", "hooks": ["before_tool_call"], "paths": ["**/.env", "/etc/**"],
//	     "decision": "reject", "reason": "tools may not touch secrets"},
//	    {"id": "no-shell", "tools": ["shell", "*/exec-*"], "decision": "reject"},
//	    {"id": "hide-keys", "patterns": ["sk-[A-Za-z0-9]{8,}"], "redact": ["sk-[A-Za-z0-9]{8,}"],
//	     "decision": "continue"}
//	  ]
//	}
//
// Rules are tried in order and the first whose conditions all hold decides
// (first match wins); when none does, the default decides (continue unless
// configured). Conditions: hooks (hook ids), tools (globs over the tool of
// before_tool_call and the candidates of before_tool_selection), paths
// (globs with "**" over the string values of path-like members anywhere
// in the input: Policy.PathKeys, by default path, file, cwd, document, ...),
// patterns (RE2 expressions over every string value of the input) and
// fields (dot paths to globs). New checks the whole policy before any hook
// is evaluated — decisions, hook ids, expressions, and that every patch
// action applies to one of its rule's hooks — and reports the rule and
// field at fault in a *PolicyError.
//
// # Decisions and patches
//
// Evaluate returns a Decision whose Reason says which rule matched, or
// that the default applied, and what in the input matched; a rejection
// sends Reason.Message as the wire reason. A continuing rule may patch the
// input in the ways the protocol allows each hook (agentpm-service §5.3):
// redact matches of expressions in tool arguments, memory content,
// queries and retrieved texts; remove tool candidates; add context
// sections and provider options to a model request; cap a knowledge
// request's top_k or a memory read's limit; give a memory operation model
// guidance. Patch is the hook's typed patch (*ToolCallPatch, ...) or nil
// when nothing changes, and Decision.Result is the hook's result object.
package hookpolicy
