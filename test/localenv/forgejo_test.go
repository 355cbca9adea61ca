package localenv

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestForgejoResume starts the real server twice on one folder, as `nudgeflow-dev dev`
// does across restarts: the second start keeps the users, their tokens, the known
// password and the repositories, and creates no user twice.
func TestForgejoResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	opts := ForgejoOptions{Port: port, HumanPassword: "resume-test-password"}
	f1, err := StartForgejoWith(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := f1.CreateRepo("demo", "kept", "main", map[string]string{"README.md": "kept\n"}); err != nil {
		t.Fatal(err)
	}
	if err := f1.Stop(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, forgejoUsersFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %v, want 0600: it holds tokens", forgejoUsersFile, fi.Mode().Perm())
	}

	f2, err := StartForgejoWith(ctx, dir, opts)
	if err != nil {
		t.Fatalf("second start on the same folder: %v", err)
	}
	if f2.URL != f1.URL || f2.AdminToken != f1.AdminToken || f2.BotToken != f1.BotToken || f2.HumanToken != f1.HumanToken {
		t.Fatal("the second start changed the URL or the tokens")
	}
	var users []struct{ Login string }
	if err := f2.API(http.MethodGet, "/admin/users?limit=50", f2.AdminToken, nil, &users); err != nil {
		t.Fatal(err)
	}
	if len(users) != 3 {
		t.Fatalf("want the three users once, got %+v", users)
	}
	if _, ok := f2.FileAt("demo", "kept", "main", "README.md"); !ok {
		t.Fatal("the repository created before the restart is gone")
	}
	// The person signs in with the known password (basic auth on the API).
	req, _ := http.NewRequest(http.MethodGet, f2.URL+"/api/v1/user", nil)
	req.SetBasicAuth(ForgejoHuman, opts.HumanPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s with the known password: %s", ForgejoHuman, resp.Status)
	}

	// A start that died after creating the users but before storing their tokens:
	// the next one gives them new tokens instead of failing on existing users.
	if err := f2.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, forgejoUsersFile)); err != nil {
		t.Fatal(err)
	}
	f3, err := StartForgejoWith(ctx, dir, opts)
	if err != nil {
		t.Fatalf("a start without the stored tokens: %v", err)
	}
	defer f3.Stop()
	if err := f3.API(http.MethodGet, "/admin/users?limit=50", f3.AdminToken, nil, &users); err != nil {
		t.Fatal(err)
	}
	if len(users) != 3 || f3.BotToken == "" || f3.BotToken == f1.BotToken {
		t.Fatalf("want the three users once with new tokens, got %+v", users)
	}
	if err := f3.API(http.MethodGet, "/user", f3.BotToken, nil, nil); err != nil {
		t.Fatalf("the bot's new token: %v", err)
	}
}
