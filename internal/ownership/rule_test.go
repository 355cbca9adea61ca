package ownership

import (
	"testing"
	"time"
)

func TestKey(t *testing.T) {
	for _, c := range []struct {
		url, key string
	}{
		{"https://github.com/org/repo", "github.com/org/repo"},
		// The forms one repository is written in.
		{"https://GitHub.com/Org/Repo.git", "github.com/org/repo"},
		{"https://github.com/org/repo/", "github.com/org/repo"},
		{"https://github.com/org/repo.git/", "github.com/org/repo"},
		{"http://github.com/org/repo", "github.com/org/repo"},
		{"HTTPS://github.com:443/org/repo", "github.com/org/repo"},
		{"http://github.com:80/org/repo", "github.com/org/repo"},
		{"https://bot:secret@github.com/org/repo", "github.com/org/repo"},
		{"https://github.com/org/repo?tab=readme#top", "github.com/org/repo"},
		{"  https://github.com/org/repo  ", "github.com/org/repo"},
		// A port of its own, GitLab subgroups, IPv6.
		{"http://127.0.0.1:8180/org/repo", "127.0.0.1:8180/org/repo"},
		{"https://gitlab.example.com/group/sub/project", "gitlab.example.com/group/sub/project"},
		{"https://[::1]:8443/org/repo", "[::1]:8443/org/repo"},
		{"https://[::1]/org/repo", "[::1]/org/repo"},
	} {
		got, err := Key(c.url)
		if err != nil || got != c.key {
			t.Errorf("Key(%q) = %q, %v; want %q", c.url, got, err, c.key)
		}
	}
	for _, bad := range []string{
		"", "github.com/org/repo", "git@github.com:org/repo.git", "ssh://git@github.com/org/repo",
		"https:///org/repo", "https://github.com/org", "https://github.com/", "https://github.com/org//repo",
		// Dot segments would name another repository once a client resolves them.
		"https://github.com/org/../victim/repo", "https://github.com/org/./repo", "https://github.com/org/%2e%2e/victim",
		"https://github.com/../repo",
	} {
		if k, err := Key(bad); err == nil {
			t.Errorf("Key(%q) = %q, want an error", bad, k)
		}
	}
}

func TestSpecURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/org/repo.git":  "https://github.com/org/repo",
		"https://github.com/org/repo/":     "https://github.com/org/repo",
		"https://github.com/org/repo.git/": "https://github.com/org/repo", // the slash first, then ".git"
		"https://github.com/Org/Repo":      "https://github.com/Org/Repo",
	} {
		if got := specURL(in); got != want {
			t.Errorf("SpecURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(ns, name, url string, age time.Duration) Claim {
		return Claim{Namespace: ns, Name: name, URL: url, Created: t0.Add(-age)}
	}
	const key = "github.com/org/repo"
	for _, c := range []struct {
		name     string
		bindings map[string]string
		claims   []Claim
		owner    string
		source   Source
		bound    []string
	}{
		{name: "nothing names it"},
		{name: "a Repository of another repository", claims: []Claim{claim("a", "r", "https://github.com/org/other", time.Hour)}},
		{name: "one Repository", claims: []Claim{claim("a", "r", "https://github.com/org/repo", time.Hour)}, owner: "a", source: sourceRepository},
		{name: "the oldest of several owns it: a later claim never steals",
			claims: []Claim{claim("b", "r", "https://github.com/org/repo.git", time.Minute), claim("a", "r", "https://GitHub.com/org/Repo", time.Hour)},
			owner:  "a", source: sourceRepository},
		{name: "the same second: namespace, then name, decide",
			claims: []Claim{claim("b", "r", "https://github.com/org/repo", 0), claim("a", "z", "https://github.com/org/repo", 0), claim("a", "b", "https://github.com/org/repo/", 0)},
			owner:  "a", source: sourceRepository},
		{name: "a Repository whose URL has no key claims nothing",
			claims: []Claim{claim("b", "r", "https://github.com/org/./repo", time.Hour), claim("a", "r", "https://github.com/org/repo", 0)},
			owner:  "a", source: sourceRepository},
		{name: "the binding decides over an older Repository",
			bindings: map[string]string{"a": "https://github.com/org/other\nhttps://github.com/org/repo.git\n", "c": "https://github.com/org/third"},
			claims:   []Claim{claim("b", "r", "https://github.com/org/repo", 24*time.Hour)},
			owner:    "a", source: sourceBinding},
		{name: "bound to two namespaces: none owns it",
			bindings: map[string]string{"b": "https://github.com/org/repo", "a": " https://github.com/Org/repo "},
			claims:   []Claim{claim("a", "r", "https://github.com/org/repo", time.Hour)},
			source:   sourceBinding, bound: []string{"a", "b"}},
		{name: "a binding of other repositories leaves the Repositories to decide",
			bindings: map[string]string{"b": "https://github.com/org/other\nnot a url"},
			claims:   []Claim{claim("a", "r", "https://github.com/org/repo", time.Hour)},
			owner:    "a", source: sourceRepository},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := decide(key, c.bindings, c.claims)
			if v.Owner != c.owner || v.Source != c.source || len(v.Bound) != len(c.bound) {
				t.Fatalf("Decide = %+v; want owner %q, source %q, bound %v", v, c.owner, c.source, c.bound)
			}
			for i := range c.bound {
				if v.Bound[i] != c.bound[i] {
					t.Fatalf("bound %v, want %v", v.Bound, c.bound)
				}
			}
		})
	}
}
