package renovate_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/test/landingforge"
)

// ---- Gitea (Forgejo's API) ----

// giteaForge reads a real Gitea as its administrator.
type giteaForge struct{ *landingforge.Forgejo }

func (g giteaForge) get(path string, out any) error {
	return g.Server.API(http.MethodGet, path, g.Server.AdminToken, nil, out)
}

func (g giteaForge) branches(base string) ([]string, string, error) {
	var branches []struct{ Name string }
	if err := g.get(base+"/branches?limit=50", &branches); err != nil {
		return nil, "", fmt.Errorf("branches: %w", err)
	}
	var names []string
	for _, b := range branches {
		names = append(names, b.Name)
	}
	var main struct{ Commit struct{ ID string } }
	if err := g.get(base+"/branches/main", &main); err != nil {
		return nil, "", fmt.Errorf("main: %w", err)
	}
	return names, main.Commit.ID, nil
}

// timelineWait bounds the wait for Gitea to record a branch's push in its pull
// request's timeline (it does so from its push queue, after the write returned).
const timelineWait = 30 * time.Second

// timeline reads pull request number's events (type and user; a comment's
// text too), sorted (events of one second come in no set order: a push
// recorded from the queue and a title edit race), once Gitea has recorded the
// push of head: it waits, up to timelineWait, for a pull_push event naming
// head; past that it reads what there is, and the comparison shows what is
// missing.
func (g giteaForge) timeline(base string, number int, head string) ([]string, error) {
	deadline := time.Now().Add(timelineWait)
	for {
		var events []struct {
			Type string
			Body string
			User struct{ Login string }
		}
		if err := g.get(fmt.Sprintf("%s/issues/%d/timeline?limit=50", base, number), &events); err != nil {
			return nil, fmt.Errorf("timeline of #%d: %w", number, err)
		}
		var out []string
		recorded := false
		for _, e := range events {
			ev := e.Type + " by " + e.User.Login
			if e.Type == "comment" {
				ev += ": " + e.Body // what a person reads: compared whole
			}
			out = append(out, ev)
			recorded = recorded || e.Type == "pull_push" && strings.Contains(e.Body, head)
		}
		if recorded || time.Now().After(deadline) {
			sort.Strings(out)
			return onePushRecord(out), nil
		}
		// The poll's pace; the condition and its deadline are above.
		<-time.After(100 * time.Millisecond)
	}
}

// onePushRecord keeps one of identical, sorted pull_push events of one pusher.
// Gitea writes a push into the pull requests of its branch from its push queue;
// a push that its queue handles around the creation of a new pull request on a
// branch that already had one (a closed pull request recreated) is recorded
// there once or twice, by timing alone. How many commits each writer pushed is
// compared apart: the commits above main, and the direct writer's own report.
func onePushRecord(sorted []string) []string {
	out := sorted[:0:0]
	for i, ev := range sorted {
		if i > 0 && strings.HasPrefix(ev, "pull_push by ") && ev == sorted[i-1] {
			continue
		}
		out = append(out, ev)
	}
	return out
}

func (g giteaForge) person(t *testing.T, owner, repo, what string) {
	t.Helper()
	if what == "" {
		return
	}
	var open []struct {
		Number int
		Head   struct{ Ref string }
	}
	require.NoError(t, g.get("/repos/"+url.PathEscape(owner)+"/"+url.PathEscape(repo)+"/pulls?state=open&limit=50", &open))
	require.Len(t, open, 1, "%s/%s: the nudge pull request a person acts on", owner, repo)
	switch what {
	case personCommits:
		_, err := g.Server.HumanCommit(owner, repo, open[0].Head.Ref, map[string]string{"NOTES.md": "Checked by hand before merging.\n"}, "Add a note")
		require.NoError(t, err)
	case personCloses:
		require.NoError(t, g.Server.ClosePR(owner, repo, open[0].Number))
	default:
		t.Fatalf("no such thing a person does: %q", what)
	}
}

// ---- GitHub (the emulator, test/forgeemu/github) ----

// githubForge reads the GitHub emulator with the bot's token.
type githubForge struct{ *landingforge.GitHub }

func (g githubForge) get(path string, out any) error {
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(g.Emu.APIURL(), "/")+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+g.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, data)
	}
	return json.Unmarshal(data, out)
}

func (g githubForge) branches(base string) ([]string, string, error) {
	var refs []struct {
		Ref    string
		Object struct{ SHA string }
	}
	if err := g.get(base+"/git/matching-refs/heads/", &refs); err != nil {
		return nil, "", fmt.Errorf("branches: %w", err)
	}
	var names []string
	main := ""
	for _, r := range refs {
		name := strings.TrimPrefix(r.Ref, "refs/heads/")
		names = append(names, name)
		if name == "main" {
			main = r.Object.SHA
		}
	}
	if main == "" {
		return nil, "", fmt.Errorf("no main among %v", names)
	}
	return names, main, nil
}

// timeline is the pull request's comments (who and what), sorted: the emulator
// keeps no other events. It writes synchronously: nothing to wait for.
func (g githubForge) timeline(base string, number int, _ string) ([]string, error) {
	var comments []struct {
		Body string
		User struct{ Login string }
	}
	if err := g.get(fmt.Sprintf("%s/issues/%d/comments?per_page=100", base, number), &comments); err != nil {
		return nil, fmt.Errorf("comments of #%d: %w", number, err)
	}
	var out []string
	for _, c := range comments {
		out = append(out, "comment by "+c.User.Login+": "+c.Body)
	}
	sort.Strings(out)
	return out, nil
}

// person: the cases where a person acts run on Gitea only (diffCase.Forges).
func (g githubForge) person(t *testing.T, owner, repo, what string) {
	t.Helper()
	if what != "" {
		t.Fatalf("a person's %q is not set up on the GitHub emulator here", what)
	}
}
