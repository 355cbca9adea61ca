package github

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// The App's commit identity is its bot user's: the id GitHub answers for
// GET /users/<slug>[bot] (not the App's), in the noreply address of the host
// without its port, read with the installation token.
func TestBotUserIsTheBotUsersID(t *testing.T) {
	var gets []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets = append(gets, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		if r.URL.Path != "/api/v3/users/konflux-app[bot]" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"login":"konflux-app[bot]","id":149321847,"type":"Bot"}`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	repo := forge.Repo{Scheme: "http", Host: host, Owner: "org", Name: "bundle"}
	bot, err := botUser(context.Background(), repo, "konflux-app", "ghs_token", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := forge.Signature{Name: "konflux-app[bot]", Email: "149321847+konflux-app[bot]@users.noreply.127.0.0.1"}
	if bot != want {
		t.Errorf("bot %+v, want %+v", bot, want)
	}
	if len(gets) != 1 || gets[0] != "GET /api/v3/users/konflux-app[bot] Bearer ghs_token" {
		t.Errorf("requests %q, want one GET of the bot user with the installation token", gets)
	}
	if got := NoreplyHost("github.com"); got != "github.com" {
		t.Errorf("NoreplyHost(github.com) = %s", got)
	}
}
