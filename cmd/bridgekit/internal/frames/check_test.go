package frames

import "testing"

func TestCheckBodyPointsIntoTheBody(t *testing.T) {
	if p, bad := CheckBody(ACP, "initialize", "", true, []byte(`{"protocolVersion":1}`)); bad {
		t.Fatalf("a minimal initialize result: %+v", p)
	}
	p, bad := CheckBody(ACP, "initialize", "", true, []byte(`{"protocolVersion":"one"}`))
	if !bad || p.Code != ProblemSchema || p.Pointer != "/protocolVersion" {
		t.Fatalf("got %+v, %v; want a schema problem at /protocolVersion", p, bad)
	}
	p, bad = CheckBody(ACP, "session/new", "", false, []byte(`{"mcpServers":[]}`))
	if !bad || p.Pointer != "/cwd" {
		t.Fatalf("session/new params without cwd: %+v, %v", p, bad)
	}
	if _, bad := CheckBody(ACP, "_vendor/thing", "", true, []byte(`1`)); bad {
		t.Fatal("a method the catalogue lacks has no problem")
	}
}
