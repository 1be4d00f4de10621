package naming

import "testing"

func TestGo(t *testing.T) {
	for in, want := range map[string]string{
		"default_shell_id":    "DefaultShellID",
		"sessionId":           "SessionID",
		"_meta":               "Meta",
		"command_arg_index":   "CommandArgIndex",
		"host/capabilities":   "HostCapabilities",
		"process.list_shells": "ProcessListShells",
		"mimeType":            "MIMEType",
		"HTTPServer":          "HTTPServer",
		"etc_shells":          "EtcShells",
		"3d":                  "X3d",
		"backoff_ms":          "BackoffMS",
		"ui":                  "UI",
		"ttl_ms":              "TTLMS",
		"session/new":         "SessionNew",
		"fs/read_text_file":   "FsReadTextFile",
		"McpServerSse":        "MCPServerSSE",
	} {
		if got := Go(in); got != want {
			t.Errorf("Go(%q) = %q, want %q", in, got, want)
		}
	}
}
