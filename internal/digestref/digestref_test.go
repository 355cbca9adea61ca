package digestref

import (
	"strings"
	"testing"
)

var (
	d1 = "sha256:" + strings.Repeat("1", 64)
	d2 = "sha256:" + strings.Repeat("2", 64)
	dn = "sha256:" + strings.Repeat("a", 64)
)

func TestFileMatcher(t *testing.T) {
	def, err := NewFileMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	custom, err := NewFileMatcher([]string{" ", `^bundle/manifests/.*\.clusterserviceversion\.yaml$`})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		m    *FileMatcher
		path string
		want bool
	}{
		{def, "Dockerfile", true},
		{def, "build/Dockerfile.bundle", true},
		{def, "Containerfile", true},
		{def, "bundle/manifests/x.clusterserviceversion.yaml", true},
		{def, "README.md", false},
		{def, "main.go", false},
		{custom, "bundle/manifests/x.clusterserviceversion.yaml", true},
		{custom, "other/x.clusterserviceversion.yaml", false},
		{custom, "Dockerfile", false},
	}
	for _, c := range cases {
		if got := c.m.Match(c.path); got != c.want {
			t.Errorf("Match(%q) = %v, want %v", c.path, got, c.want)
		}
	}
	if _, err := NewFileMatcher([]string{"("}); err == nil {
		t.Error("invalid regex accepted")
	}
}

func TestRewrite(t *testing.T) {
	cases := []struct {
		name, image, in, want string
		n                     int
	}{
		{"digest only", "quay.io/org/op", "image: quay.io/org/op@" + d1 + "\n", "image: quay.io/org/op@" + dn + "\n", 1},
		{"keeps tag", "quay.io/org/op", "FROM quay.io/org/op:v1.2@" + d1, "FROM quay.io/org/op:v1.2@" + dn, 1},
		{"prefix repo untouched", "quay.io/org/op", "a: quay.io/org/operand@" + d1 + "\nb: quay.io/org/op@" + d2, "a: quay.io/org/operand@" + d1 + "\nb: quay.io/org/op@" + dn, 1},
		{"longer registry untouched", "quay.io/org/op", "registry.quay.io/org/op@" + d1, "registry.quay.io/org/op@" + d1, 0},
		{"other repo untouched", "quay.io/org/op", "quay.io/other/op@" + d1, "quay.io/other/op@" + d1, 0},
		{"tag without digest untouched", "quay.io/org/op", "quay.io/org/op:latest", "quay.io/org/op:latest", 0},
		{"regex metachars quoted", "quay.io/org/op", "quayXio/org/op@" + d1, "quayXio/org/op@" + d1, 0},
		{"quoted and several", "quay.io/org/op", `["quay.io/org/op@` + d1 + `", 'quay.io/org/op:1@` + d2 + `']`, `["quay.io/org/op@` + dn + `", 'quay.io/org/op:1@` + dn + `']`, 2},
		{"already there counts", "quay.io/org/op", "quay.io/org/op@" + dn, "quay.io/org/op@" + dn, 1},
		{"short digest untouched", "quay.io/org/op", "quay.io/org/op@sha256:abc", "quay.io/org/op@sha256:abc", 0},
		{"port registry", "localhost:5000/org/op", "localhost:5000/org/op@" + d1, "localhost:5000/org/op@" + dn, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewRewriter(c.image, dn)
			if err != nil {
				t.Fatal(err)
			}
			got, n := r.Rewrite(c.in)
			if got != c.want || n != c.n {
				t.Errorf("Rewrite = %q, %d; want %q, %d", got, n, c.want, c.n)
			}
		})
	}
}

func TestNewRewriterRejects(t *testing.T) {
	for _, c := range [][2]string{
		{"quay.io/org/op", "sha256:abc"},
		{"quay.io/org/op:tag", dn},
		{"quay.io/org/op@" + d1, dn},
		{".*", dn},
		{"", dn},
	} {
		if _, err := NewRewriter(c[0], c[1]); err == nil {
			t.Errorf("NewRewriter(%q, %q) accepted", c[0], c[1])
		}
	}
}

func TestShort(t *testing.T) {
	if got := Short(d1); got != "sha256:111111111111" {
		t.Errorf("Short = %q", got)
	}
	if got := Short(""); got != "" {
		t.Errorf("Short(\"\") = %q", got)
	}
}

func FuzzRewrite(f *testing.F) {
	f.Add("image: quay.io/org/op:v1@"+d1, "quay.io/org/op")
	f.Add("quay.io/org/operand@"+d1, "quay.io/org/op")
	f.Fuzz(func(t *testing.T, content, image string) {
		r, err := NewRewriter(image, dn)
		if err != nil {
			return
		}
		out, n := r.Rewrite(content)
		again, n2 := r.Rewrite(out)
		if again != out {
			t.Fatalf("rewrite not idempotent: %q -> %q", out, again)
		}
		if n2 < n {
			t.Fatalf("references lost: %d then %d", n, n2)
		}
		if n == 0 && out != content {
			t.Fatalf("content changed without a reference")
		}
	})
}

func TestParseReference(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		want Reference
	}{
		{"quay.io/org/img", Reference{Repository: "quay.io/org/img"}},
		{"quay.io/org/img:v1", Reference{Repository: "quay.io/org/img", Tag: "v1"}},
		{"quay.io/org/img@" + d1, Reference{Repository: "quay.io/org/img", Digest: d1}},
		{"quay.io/org/img:v1@" + d1, Reference{Repository: "quay.io/org/img", Tag: "v1", Digest: d1}},
		{"registry.local:5000/org/img", Reference{Repository: "registry.local:5000/org/img"}},
		{"registry.local:5000/org/img:on-push-abc", Reference{Repository: "registry.local:5000/org/img", Tag: "on-push-abc"}},
		{"registry.local:5000/org/img@" + d1, Reference{Repository: "registry.local:5000/org/img", Digest: d1}},
		{"registry.local:5000/org/img:v1@" + d1, Reference{Repository: "registry.local:5000/org/img", Tag: "v1", Digest: d1}},
		{"127.0.0.1:5000/img:v1", Reference{Repository: "127.0.0.1:5000/img", Tag: "v1"}},
		// Without a "/", a ":" can only start a tag (Docker reads busybox:5000 the same way).
		{"img:v1", Reference{Repository: "img", Tag: "v1"}},
		{"", Reference{}},
	} {
		got := ParseReference(tc.ref)
		if got != tc.want {
			t.Errorf("ParseReference(%q) = %+v, want %+v", tc.ref, got, tc.want)
		}
		if got.Repository != Repository(tc.ref) {
			t.Errorf("Repository(%q) = %q, want %q", tc.ref, Repository(tc.ref), got.Repository)
		}
	}
}

func TestReferenceTaggedAndPullSpec(t *testing.T) {
	for ref, tagged := range map[string]string{
		"registry.local:5000/org/img:v1@" + d1: "registry.local:5000/org/img:v1",
		"registry.local:5000/org/img@" + d1:    "registry.local:5000/org/img",
		"quay.io/org/img:v1":                   "quay.io/org/img:v1",
	} {
		if got := ParseReference(ref).Tagged(); got != tagged {
			t.Errorf("ParseReference(%q).Tagged() = %q, want %q", ref, got, tagged)
		}
	}
	for image, want := range map[string]string{
		"registry.local:5000/org/img:v1":       "registry.local:5000/org/img@" + d2,
		"registry.local:5000/org/img:v1@" + d1: "registry.local:5000/org/img@" + d2,
		"quay.io/org/img":                      "quay.io/org/img@" + d2,
	} {
		if got := PullSpec(image, d2); got != want {
			t.Errorf("PullSpec(%q) = %q, want %q", image, got, want)
		}
	}
}
