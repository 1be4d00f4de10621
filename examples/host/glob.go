package main

import (
	"fmt"
	"path"
	"strings"
)

// globMatch reports whether name, a slash-separated relative path, matches
// pattern: segments are matched with path.Match (*, ?, [...] within one
// segment) and a "**" segment matches any number of segments, none
// included. A malformed pattern matches nothing (checkGlob rejects it when
// a file is loaded).
func globMatch(pattern, name string) bool {
	return matchSegments(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range name {
				if matchSegments(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); !ok || err != nil {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// checkGlob reports a malformed pattern.
func checkGlob(pattern string) error {
	if pattern == "" {
		return fmt.Errorf("empty pattern")
	}
	for seg := range strings.SplitSeq(pattern, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", pattern, err)
		}
	}
	return nil
}

// checkPathGlob reports a malformed path pattern, or one that could never
// match: path patterns match workspace-relative paths such as "src/a.go",
// so an absolute pattern, or one with an empty, "." or ".." element, would
// match nothing.
func checkPathGlob(pattern string) error {
	if err := checkGlob(pattern); err != nil {
		return err
	}
	for seg := range strings.SplitSeq(pattern, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("pattern %q: path patterns are relative to the workspace, with no empty, \".\" or \"..\" elements", pattern)
		}
	}
	return nil
}
