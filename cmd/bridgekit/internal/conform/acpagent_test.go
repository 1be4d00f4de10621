package conform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInside(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		dir:                                   true,
		filepath.Join(dir, "a.txt"):           true,
		filepath.Join(dir, "new", "b.txt"):    true,
		filepath.Join(dir, "..", "x"):         false,
		dir + "-sibling/a":                    false,
		"/etc/hostname":                       false,
		filepath.Join(dir, "out", "hostname"): false, // a link out of the workspace
	} {
		if got := inside(dir, path); got != want {
			t.Errorf("inside(%q): %v, want %v", path, got, want)
		}
	}
}

func FuzzInside(f *testing.F) {
	dir := f.TempDir()
	f.Add("a.txt")
	f.Add("../a")
	f.Add("x/../../y")
	f.Add("/etc/passwd")
	f.Fuzz(func(t *testing.T, rel string) {
		if strings.ContainsRune(rel, 0) {
			return
		}
		p := rel
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, rel)
		}
		if !inside(dir, p) {
			return
		}
		r, err := filepath.Rel(dir, filepath.Clean(p))
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			t.Fatalf("inside(%q, %q) but it is %q from it", dir, p, r)
		}
	})
}

func FuzzChoose(f *testing.F) {
	f.Add(`[{"optionId":"a","kind":"allow_once"},{"optionId":"r","kind":"reject_once"}]`, "allow")
	f.Add(`[{"optionId":"r","kind":"reject_always"}]`, "reject")
	f.Add(`[]`, "cancelled")
	f.Fuzz(func(t *testing.T, opts, policy string) {
		var offered []permissionOpt
		if json.Unmarshal([]byte(opts), &offered) != nil {
			return
		}
		res, answered := choose(offered, policy)
		out := res.(map[string]any)["outcome"].(map[string]any)
		switch out["outcome"] {
		case "cancelled":
			if answered != cancelled {
				t.Fatalf("cancelled, answered %q", answered)
			}
		case "selected":
			id := out["optionId"]
			for _, o := range offered {
				if o.ID == id {
					if policy == allowOnce && !strings.HasPrefix(o.Kind, "allow_") || policy == rejectOnce && !strings.HasPrefix(o.Kind, "reject_") {
						t.Fatalf("policy %q chose option kind %q", policy, o.Kind)
					}
					return
				}
			}
			t.Fatalf("chose %v, not offered", id)
		default:
			t.Fatalf("outcome %v", out)
		}
	})
}
