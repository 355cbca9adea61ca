package emucore

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// reply is what a test request got.
type reply struct {
	code   int
	header http.Header
	body   string
}

// call sends method to url with header pairs ("Name", "value", ...).
func call(t *testing.T, method, url string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{code: resp.StatusCode, header: resp.Header, body: string(b)}
}

func TestServeAndServeAt(t *testing.T) {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello "+r.URL.Path) })
	h := Serve(hello)
	t.Cleanup(h.Close)
	if !strings.HasPrefix(h.URL(), "http://127.0.0.1:") || h.URL() != "http://"+h.Host() {
		t.Fatalf("URL %q, Host %q", h.URL(), h.Host())
	}
	if got := call(t, http.MethodGet, h.URL()+"/x").body; got != "hello /x" {
		t.Fatalf("got %q", got)
	}

	// The fixed address of a running server is taken: ServeAt says so, naming the forge.
	if _, err := ServeAt("Test emulator", h.Host(), hello); err == nil ||
		!strings.Contains(err.Error(), "Test emulator: listening on "+h.Host()) {
		t.Fatalf("taken address: %v", err)
	}
	at, err := ServeAt("Test emulator", "127.0.0.1:0", hello)
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, http.MethodGet, at.URL()+"/y").body; got != "hello /y" {
		t.Fatalf("got %q", got)
	}
	at.Close()
	if _, err := http.Get(at.URL()); err == nil {
		t.Fatal("a closed server still answers")
	}
}

func TestLogKeepsTheLatest(t *testing.T) {
	l := NewLog[int](4)
	for i := range 5 {
		l.Add(i)
	}
	// At 4 entries the oldest half went: 2, 3, then 4.
	if got := l.All(); len(got) != 3 || got[0] != 2 || got[2] != 4 {
		t.Fatalf("log %v", got)
	}
	got := l.All()
	got[0] = 99
	if l.All()[0] != 2 {
		t.Fatal("All shares its slice")
	}
}

func TestTokens(t *testing.T) {
	type user struct {
		Name string
		Bot  bool
	}
	tk := NewTokens[user]()
	if _, ok := tk.Lookup(""); ok {
		t.Fatal("no token authenticates")
	}
	tk.Add("a", user{Name: "alice"})
	tk.Add("b", user{Name: "bot", Bot: true})
	if u, ok := tk.Lookup("a"); !ok || u.Name != "alice" {
		t.Fatalf("lookup: %v %v", u, ok)
	}
	if u, ok := tk.Find(func(u user) bool { return u.Bot }); !ok || u.Name != "bot" {
		t.Fatalf("find: %v %v", u, ok)
	}
	tk.Revoke("b")
	if _, ok := tk.Lookup("b"); ok {
		t.Fatal("a revoked token still authenticates")
	}
	if _, ok := tk.Find(func(u user) bool { return u.Bot }); ok {
		t.Fatal("Find sees a revoked token's user")
	}
}
