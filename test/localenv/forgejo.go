package localenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/internal/pac"
)

// Gitea is the real Forgejo/Gitea API server of the test world: the Gitea binary that
// hack/tools.sh builds from the Go module proxy (GITEA env overrides the path).
func Gitea() (string, error) { return toolPath("GITEA", "path gitea") }

// The users StartForgejo creates. The bot is nudgeflow's (the SCM Secret's username),
// the human edits PRs and pushes commits as a person would, the admin owns the
// organisations and merges.
const (
	ForgejoAdmin = "forgeadmin"
	ForgejoBot   = "nudgeflow"
	ForgejoHuman = "dev"
)

// ForgejoOptions configure a test Forgejo/Gitea server.
type ForgejoOptions struct {
	// TreesPerPage is [api] DEFAULT_GIT_TREES_PER_PAGE, the entries per page of a tree
	// listing (the server's default, 1000, when zero); small values prove paging.
	TreesPerPage int
	// Log receives the server's output (dir/gitea.log when nil).
	Log io.Writer
	// Port is the server's fixed loopback port (a free one when zero): `nudgeflow
	// dev` keeps the URLs in its Components valid from one start to the next.
	Port int
	// HumanPassword is ForgejoHuman's password, so a person can sign in to the web
	// UI as that user (a random one when empty).
	HumanPassword string
	// NoParentDeathSignal lets the server outlive the thread that started it (tests
	// of `nudgeflow-dev dev`'s crash recovery, which must find it still running).
	NoParentDeathSignal bool
}

// forgejoUsersFile, in the server's folder, keeps the users' access tokens (mode
// 0600): a second start on the same folder reuses them instead of creating the
// users again, which the server would refuse.
const forgejoUsersFile = "users.json"

// ForgejoUsers are the access tokens of the three users, by user name. They are
// secrets: never logged.
type ForgejoUsers map[string]string

// ReadForgejoUsers reads the tokens a server started in dir stored.
func ReadForgejoUsers(dir string) (ForgejoUsers, error) {
	path := filepath.Join(dir, forgejoUsersFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the Forgejo users' tokens: %w", err)
	}
	var u ForgejoUsers
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return u, nil
}

// Forgejo is a running Gitea server (the API Forgejo shares) with three users, their
// tokens, and a receiver of the repositories' webhooks that counts CI builds by
// Pipelines as Code's rules.
type Forgejo struct {
	// URL is the server's root, http://127.0.0.1:<port>.
	URL string
	// AdminToken, BotToken and HumanToken are access tokens (all scopes) of
	// ForgejoAdmin, ForgejoBot and ForgejoHuman.
	AdminToken, BotToken, HumanToken string
	// BotEmail and HumanEmail are the users' e-mail addresses.
	BotEmail, HumanEmail string

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	hc   *http.Client
	ci   *ciWatcher
}

// StartForgejo starts a Gitea server with its state in dir (SQLite, repositories,
// logs) on a free loopback port, install mode off, and waits until it answers.
// A folder a previous start left is resumed: same secrets, same users and tokens.
func StartForgejo(ctx context.Context, dir string) (*Forgejo, error) {
	return StartForgejoWith(ctx, dir, ForgejoOptions{})
}

// StartForgejoWith is StartForgejo with options.
func StartForgejoWith(ctx context.Context, dir string, opts ForgejoOptions) (*Forgejo, error) {
	bin, err := Gitea()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	port := opts.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	f := &Forgejo{URL: fmt.Sprintf("http://127.0.0.1:%d", port), dir: dir, done: make(chan struct{}),
		hc: &http.Client{Timeout: 2 * time.Minute}} // a loaded test machine is slow
	if err := os.MkdirAll(filepath.Join(dir, "custom"), 0o755); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "app.ini")
	// A resumed server keeps its secrets: SECRET_KEY encrypts what the database
	// stores encrypted.
	ini, err := forgejoINI(dir, filepath.Dir(bin), port, opts, iniSecrets(conf))
	if err != nil {
		return nil, err
	}
	// Tokens stored for a database that is gone name nobody.
	_, dbErr := os.Stat(filepath.Join(dir, "data", "gitea.db"))
	fresh := errors.Is(dbErr, os.ErrNotExist)
	if err := os.WriteFile(conf, []byte(ini), 0o600); err != nil {
		return nil, err
	}
	var log io.Writer = opts.Log
	if log == nil {
		lf, err := os.Create(filepath.Join(dir, "gitea.log"))
		if err != nil {
			return nil, err
		}
		log = lf
	}
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, append(args, "--config", conf, "--work-path", dir)...)
		cmd.Dir, cmd.Env = dir, forgejoEnv(dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, log
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("gitea %s: %w", args[0], err)
		}
		return out.String(), nil
	}
	if _, err := run("migrate"); err != nil {
		return nil, err
	}
	f.BotEmail, f.HumanEmail = ForgejoBot+"@example.com", ForgejoHuman+"@example.com"
	users, err := ensureForgejoUsers(dir, fresh, run, f, opts)
	if err != nil {
		return nil, err
	}
	f.AdminToken, f.BotToken, f.HumanToken = users[ForgejoAdmin], users[ForgejoBot], users[ForgejoHuman]

	f.cmd = exec.Command(bin, "web", "--config", conf, "--work-path", dir)
	f.cmd.Dir, f.cmd.Env = dir, forgejoEnv(dir)
	f.cmd.Stdout, f.cmd.Stderr = log, log
	f.cmd.SysProcAttr = forgejoProcAttr(!opts.NoParentDeathSignal)
	var startErr error
	OnLongLivedThread(func() { startErr = f.cmd.Start() })
	if startErr != nil {
		return nil, fmt.Errorf("starting gitea: %w", startErr)
	}
	go func() { _ = f.cmd.Wait(); close(f.done) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := f.hc.Get(f.URL + "/api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-f.done:
			return nil, fmt.Errorf("gitea exited while starting (log: %s)", filepath.Join(dir, "gitea.log"))
		case <-ctx.Done():
			_ = f.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = f.Stop()
			return nil, errors.New("gitea did not answer within 2 minutes")
		}
	}
	f.ci = newCIWatcher(f)
	return f, nil
}

// ensureForgejoUsers makes the three users exist, each with an access token, and
// stores the tokens in dir: a user with a stored token is left alone, one that
// exists without one (a start that died between creating it and storing the file)
// gets a new token, never a second account.
func ensureForgejoUsers(dir string, fresh bool, run func(...string) (string, error), f *Forgejo, opts ForgejoOptions) (ForgejoUsers, error) {
	users, err := ReadForgejoUsers(dir)
	if err != nil || fresh {
		users = ForgejoUsers{}
	}
	list, err := run("admin", "user", "list")
	if err != nil {
		return nil, err
	}
	existing := map[string]bool{}
	for _, line := range strings.Split(list, "\n")[1:] { // ID Username Email ...
		if fs := strings.Fields(line); len(fs) > 1 {
			existing[fs[1]] = true
		}
	}
	password := opts.HumanPassword
	for _, u := range []struct {
		name, email string
		admin       bool
	}{
		{ForgejoAdmin, ForgejoAdmin + "@example.com", true},
		{ForgejoBot, f.BotEmail, false},
		{ForgejoHuman, f.HumanEmail, false},
	} {
		if users[u.name] != "" && existing[u.name] {
			continue
		}
		if existing[u.name] {
			out, err := run("admin", "user", "generate-access-token", "--username", u.name,
				"--token-name", "nudgeflow-"+randomHex(4), "--scopes", "all", "--raw")
			if err != nil {
				return nil, err
			}
			// --raw prints the token alone, but the server may log on stdout first.
			tok := rawToken.FindString(out)
			if tok == "" {
				return nil, fmt.Errorf("gitea admin user generate-access-token %s printed no token", u.name)
			}
			users[u.name] = tok
			if u.name == ForgejoHuman && password != "" {
				if _, err := run("admin", "user", "change-password", "--username", u.name, "--password", password,
					"--must-change-password=false"); err != nil {
					return nil, err
				}
			}
			continue
		}
		pw := randomHex(16)
		if u.name == ForgejoHuman && password != "" {
			pw = password
		}
		args := []string{"admin", "user", "create", "--username", u.name, "--email", u.email,
			"--password", pw, "--must-change-password=false",
			"--access-token", "--access-token-name", "test", "--access-token-scopes", "all"}
		if u.admin {
			args = append(args, "--admin")
		}
		out, err := run(args...)
		if err != nil {
			return nil, err
		}
		m := tokenLine.FindStringSubmatch(out)
		if m == nil {
			return nil, fmt.Errorf("gitea admin user create %s printed no access token", u.name)
		}
		users[u.name] = m[1]
	}
	b, err := json.Marshal(users)
	if err != nil {
		return nil, fmt.Errorf("encoding the Forgejo users' tokens: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, forgejoUsersFile), b, 0o600); err != nil {
		return nil, fmt.Errorf("storing the Forgejo users' tokens: %w", err)
	}
	return users, nil
}

// iniSecrets reads SECRET_KEY and INTERNAL_TOKEN from an app.ini a previous start
// wrote (none when there is none).
func iniSecrets(path string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if k = strings.TrimSpace(k); ok && (k == "SECRET_KEY" || k == "INTERNAL_TOKEN") {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

var rawToken = regexp.MustCompile(`(?m)^[0-9a-f]{40}$`)

var tokenLine = regexp.MustCompile(`Access token was successfully created\.\.\. ([0-9a-f]+)`)

func forgejoEnv(dir string) []string {
	env := []string{"HOME=" + dir, "GITEA_WORK_DIR=" + dir, "USER=" + currentUser()}
	for _, k := range []string{"PATH", "TMPDIR", "LANG"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// forgejoINI is a minimal app.ini: install locked, SQLite, no SSH, no mail, no
// indexers or cron, webhooks allowed to loopback receivers, and queues with one
// worker so events leave in the order they were made.
func forgejoINI(dir, static string, port int, opts ForgejoOptions, secrets map[string]string) (string, error) {
	secret := func(k string, n int) string {
		if v := secrets[k]; v != "" {
			return v
		}
		return randomHex(n)
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("APP_NAME = nudgeflow test forge")
	p("RUN_USER = %s", currentUser())
	p("RUN_MODE = prod")
	p("WORK_PATH = %s", dir)
	p("I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true") // test machines and CI run as root
	p("[server]")
	p("PROTOCOL = http")
	p("HTTP_ADDR = 127.0.0.1")
	p("HTTP_PORT = %d", port)
	p("DOMAIN = 127.0.0.1")
	p("ROOT_URL = http://127.0.0.1:%d/", port)
	p("DISABLE_SSH = true")
	p("START_SSH_SERVER = false")
	p("OFFLINE_MODE = true")
	p("LFS_START_SERVER = false")
	p("APP_DATA_PATH = %s", filepath.Join(dir, "data"))
	p("STATIC_ROOT_PATH = %s", static)
	p("[database]")
	p("DB_TYPE = sqlite3")
	p("PATH = %s", filepath.Join(dir, "data", "gitea.db"))
	p("SQLITE_JOURNAL_MODE = WAL")
	p("[repository]")
	p("ROOT = %s", filepath.Join(dir, "repos"))
	p("DEFAULT_BRANCH = main")
	p("[repository.pull-request]")
	p("WORK_IN_PROGRESS_PREFIXES = WIP:,[WIP]")
	p("[security]")
	p("INSTALL_LOCK = true")
	p("SECRET_KEY = %s", secret("SECRET_KEY", 32))
	p("INTERNAL_TOKEN = %s", secret("INTERNAL_TOKEN", 48))
	p("[oauth2]")
	p("ENABLED = false")
	p("[service]")
	p("DISABLE_REGISTRATION = true")
	p("DEFAULT_KEEP_EMAIL_PRIVATE = false")
	p("[mailer]")
	p("ENABLED = false")
	p("[session]")
	p("PROVIDER = memory")
	p("[cache]")
	p("ADAPTER = memory")
	p("[log]")
	p("MODE = console")
	p("LEVEL = Warn")
	p("ROOT_PATH = %s", filepath.Join(dir, "log"))
	p("[webhook]")
	p("ALLOWED_HOST_LIST = loopback")
	p("DELIVER_TIMEOUT = 10")
	p("[queue]")
	p("TYPE = channel")
	p("[queue.push_update]")
	p("MAX_WORKERS = 1")
	p("[queue.webhook_sender]")
	p("MAX_WORKERS = 1")
	p("[indexer]")
	p("ISSUE_INDEXER_TYPE = db")
	p("REPO_INDEXER_ENABLED = false")
	p("[cron]")
	p("ENABLED = false")
	p("[cron.update_checker]")
	p("ENABLED = false")
	p("[actions]")
	p("ENABLED = false")
	p("[packages]")
	p("ENABLED = false")
	p("[api]")
	p("ENABLE_SWAGGER = false")
	if opts.TreesPerPage > 0 {
		p("DEFAULT_GIT_TREES_PER_PAGE = %d", opts.TreesPerPage)
	}
	return b.String(), nil
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 seconds) and the receiver.
func (f *Forgejo) Stop() error {
	if f.ci != nil {
		f.ci.srv.Close()
	}
	if f.cmd == nil || f.cmd.Process == nil {
		return nil
	}
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		<-f.done
	}
	return nil
}

// ConnectForgejo is a client of the server another process started in dir and
// serves at url (`nudgeflow-dev dev --forgejo`): the users' stored tokens and the
// API, nothing to stop (Stop does nothing).
func ConnectForgejo(dir, url string) (*Forgejo, error) {
	users, err := ReadForgejoUsers(dir)
	if err != nil {
		return nil, err
	}
	return &Forgejo{URL: url, dir: dir, done: make(chan struct{}), hc: &http.Client{Timeout: 2 * time.Minute},
		AdminToken: users[ForgejoAdmin], BotToken: users[ForgejoBot], HumanToken: users[ForgejoHuman]}, nil
}

// Dir is the folder holding the server's state and log.
func (f *Forgejo) Dir() string { return f.dir }

// ---- API helpers (tests and the e2e harness) ----

// APIError is a failed API call's status and message.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("forgejo API %d: %s", e.Status, e.Message) }

// API sends one request with token and decodes the JSON answer into out (when not nil).
func (f *Forgejo) API(method, path, token string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.URL+"/api/v1"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "token "+token)
	resp, err := f.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e struct{ Message string }
		_ = json.Unmarshal(data, &e)
		return &APIError{Status: resp.StatusCode, Message: e.Message}
	}
	if out != nil && len(data) > 0 {
		return json.Unmarshal(data, out)
	}
	return nil
}

func esc(s string) string { return url.PathEscape(s) }

// CreateRepo creates the organisation owner (when missing) and the repository
// owner/name whose branch holds files in one commit, with the bot and the human as
// collaborators with write access.
func (f *Forgejo) CreateRepo(owner, name, branch string, files map[string]string) error {
	var ae *APIError
	if err := f.API(http.MethodGet, "/orgs/"+esc(owner), f.AdminToken, nil, nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		// Some names are reserved ("org", "user", "api", ...): the server says so.
		if err := f.API(http.MethodPost, "/orgs", f.AdminToken, map[string]any{"username": owner, "visibility": "public"}, nil); err != nil {
			return fmt.Errorf("creating organisation %s: %w", owner, err)
		}
	} else if err != nil {
		return err
	}
	if err := f.API(http.MethodPost, "/orgs/"+esc(owner)+"/repos", f.AdminToken,
		map[string]any{"name": name, "default_branch": branch, "auto_init": false}, nil); err != nil {
		return fmt.Errorf("creating repository %s/%s: %w", owner, name, err)
	}
	var ops []map[string]string
	for path, content := range files {
		ops = append(ops, map[string]string{"operation": "create", "path": path, "content": base64.StdEncoding.EncodeToString([]byte(content))})
	}
	if err := f.API(http.MethodPost, "/repos/"+esc(owner)+"/"+esc(name)+"/contents", f.AdminToken, map[string]any{
		"branch": branch, "message": "initial commit", "files": ops,
		"author": map[string]string{"name": "Admin", "email": ForgejoAdmin + "@example.com"}}, nil); err != nil {
		return fmt.Errorf("first commit of %s/%s: %w", owner, name, err)
	}
	for _, u := range []string{ForgejoBot, ForgejoHuman} {
		if err := f.API(http.MethodPut, "/repos/"+esc(owner)+"/"+esc(name)+"/collaborators/"+u, f.AdminToken,
			map[string]string{"permission": "write"}, nil); err != nil {
			return fmt.Errorf("adding %s to %s/%s: %w", u, owner, name, err)
		}
	}
	return nil
}

// RepoURL is the clone URL of owner/name.
func (f *Forgejo) RepoURL(owner, name string) string { return f.URL + "/" + owner + "/" + name }

// FileAt returns a file's content at ref (a branch or commit); ok is false when absent.
func (f *Forgejo) FileAt(owner, name, ref, path string) (string, bool) {
	var c struct{ Content, Encoding string }
	err := f.API(http.MethodGet, "/repos/"+esc(owner)+"/"+esc(name)+"/contents/"+path+"?ref="+url.QueryEscape(ref), f.AdminToken, nil, &c)
	if err != nil {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(c.Content)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// ForgejoCommit is a commit as the tests look at it.
type ForgejoCommit struct {
	SHA, Message, AuthorEmail, CommitterEmail string
	Parents                                   []string
}

// Commit reads one commit.
func (f *Forgejo) Commit(owner, name, sha string) (ForgejoCommit, error) {
	var c struct {
		SHA    string
		Commit struct {
			Message   string
			Author    struct{ Email string }
			Committer struct{ Email string }
		}
		Parents []struct{ SHA string }
	}
	if err := f.API(http.MethodGet, "/repos/"+esc(owner)+"/"+esc(name)+"/git/commits/"+sha, f.AdminToken, nil, &c); err != nil {
		return ForgejoCommit{}, err
	}
	out := ForgejoCommit{SHA: c.SHA, Message: c.Commit.Message, AuthorEmail: c.Commit.Author.Email, CommitterEmail: c.Commit.Committer.Email}
	for _, p := range c.Parents {
		out.Parents = append(out.Parents, p.SHA)
	}
	return out, nil
}

// Head is a branch's head commit; ok is false when the branch does not exist.
func (f *Forgejo) Head(owner, name, branch string) (ForgejoCommit, bool) {
	var b struct{ Commit struct{ ID string } }
	if err := f.API(http.MethodGet, "/repos/"+esc(owner)+"/"+esc(name)+"/branches/"+branch, f.AdminToken, nil, &b); err != nil {
		return ForgejoCommit{}, false
	}
	c, err := f.Commit(owner, name, b.Commit.ID)
	return c, err == nil
}

// ForgejoPR is a pull request as the tests look at it.
type ForgejoPR struct {
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	State   string `json:"state"`
	Draft   bool   `json:"draft"`
	Merged  bool   `json:"merged"`
	HTMLURL string `json:"html_url"`
	Head    struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

// PR reads one pull request.
func (f *Forgejo) PR(owner, name string, number int) (ForgejoPR, error) {
	var p ForgejoPR
	err := f.API(http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls/%d", esc(owner), esc(name), number), f.AdminToken, nil, &p)
	return p, err
}

// PRs lists every pull request of the repository, in every state.
func (f *Forgejo) PRs(owner, name string) ([]ForgejoPR, error) {
	var all []ForgejoPR
	for page := 1; ; page++ {
		var ps []ForgejoPR
		if err := f.API(http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls?state=all&limit=50&page=%d", esc(owner), esc(name), page), f.AdminToken, nil, &ps); err != nil {
			return nil, err
		}
		all = append(all, ps...)
		if len(ps) < 50 {
			return all, nil
		}
	}
}

// EditBody sets a PR's description as the human.
func (f *Forgejo) EditBody(owner, name string, number int, body string) error {
	return f.API(http.MethodPatch, fmt.Sprintf("/repos/%s/%s/pulls/%d", esc(owner), esc(name), number), f.HumanToken, map[string]any{"body": body}, nil)
}

// MarkReady lifts a draft as a person does: the human edits the title without its
// work-in-progress prefix.
func (f *Forgejo) MarkReady(owner, name string, number int) error {
	p, err := f.PR(owner, name, number)
	if err != nil {
		return err
	}
	title := p.Title
	for _, prefix := range []string{"WIP:", "[WIP]"} {
		if strings.HasPrefix(strings.ToUpper(title), prefix) {
			title = strings.TrimSpace(title[len(prefix):])
		}
	}
	return f.API(http.MethodPatch, fmt.Sprintf("/repos/%s/%s/pulls/%d", esc(owner), esc(name), number), f.HumanToken, map[string]any{"title": title}, nil)
}

// MergePR merges a pull request as the admin (a merge commit). The server refuses a
// work-in-progress PR (405) and one whose mergeability it has not checked yet.
func (f *Forgejo) MergePR(owner, name string, number int) error {
	return f.API(http.MethodPost, fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", esc(owner), esc(name), number), f.AdminToken, map[string]any{"Do": "merge"}, nil)
}

// ClosePR closes a pull request as the human.
func (f *Forgejo) ClosePR(owner, name string, number int) error {
	return f.API(http.MethodPatch, fmt.Sprintf("/repos/%s/%s/pulls/%d", esc(owner), esc(name), number), f.HumanToken, map[string]any{"state": "closed"}, nil)
}

// HumanCommit pushes one commit by the human on top of branch, writing files, and
// returns its SHA.
func (f *Forgejo) HumanCommit(owner, name, branch string, files map[string]string, message string) (string, error) {
	return f.HumanCommitAs(owner, name, branch, "Dev", f.HumanEmail, files, message)
}

// HumanCommitAs is HumanCommit authored by another person (the human's token pushes
// it, as when a maintainer pushes a colleague's commit).
func (f *Forgejo) HumanCommitAs(owner, name, branch, authorName, authorEmail string, files map[string]string, message string) (string, error) {
	var ops []map[string]string
	for path, content := range files {
		op := map[string]string{"operation": "create", "path": path, "content": base64.StdEncoding.EncodeToString([]byte(content))}
		if _, ok := f.FileAt(owner, name, branch, path); ok {
			op["operation"] = "update"
			op["sha"] = f.blobSHA(owner, name, branch, path)
		}
		ops = append(ops, op)
	}
	var out struct{ Commit struct{ SHA string } }
	err := f.API(http.MethodPost, "/repos/"+esc(owner)+"/"+esc(name)+"/contents", f.HumanToken, map[string]any{
		"branch": branch, "message": message, "files": ops,
		"author": map[string]string{"name": authorName, "email": authorEmail}}, &out)
	return out.Commit.SHA, err
}

func (f *Forgejo) blobSHA(owner, name, ref, path string) string {
	var c struct{ SHA string }
	_ = f.API(http.MethodGet, "/repos/"+esc(owner)+"/"+esc(name)+"/contents/"+path+"?ref="+url.QueryEscape(ref), f.AdminToken, nil, &c)
	return c.SHA
}

// Comments lists the bodies of a PR's comments.
func (f *Forgejo) Comments(owner, name string, number int) ([]string, error) {
	var cs []struct{ Body string }
	if err := f.API(http.MethodGet, fmt.Sprintf("/repos/%s/%s/issues/%d/comments", esc(owner), esc(name), number), f.AdminToken, nil, &cs); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Body)
	}
	return out, nil
}

// AddSystemWebhook registers a system webhook (every repository's pull request
// events, signed with secret) to url: how a bridge's forge webhook receiver hears
// of repositories a test creates later.
func (f *Forgejo) AddSystemWebhook(url, secret string) error {
	// A resumed server (`nudgeflow-dev dev --forgejo` started again) has it already:
	// a second one would deliver every event twice.
	var hooks []struct {
		Config map[string]string `json:"config"`
	}
	if err := f.API(http.MethodGet, "/admin/hooks?type=system&limit=50", f.AdminToken, nil, &hooks); err != nil {
		return fmt.Errorf("listing the system webhooks: %w", err)
	}
	for _, h := range hooks {
		if h.Config["url"] == url {
			return nil
		}
	}
	if err := f.API(http.MethodPost, "/admin/hooks", f.AdminToken, map[string]any{
		"type": "gitea", "active": true, "events": []string{"pull_request"},
		"config": map[string]string{"url": url, "content_type": "json", "secret": secret, "is_system_webhook": "true"},
	}, nil); err != nil {
		// The secret stays out of the error: the API error carries the server's message only.
		return fmt.Errorf("registering the system webhook to %s: %w", url, err)
	}
	return nil
}

// ---- CI builds, counted from the server's webhooks ----

// ForgejoCIEvent is one webhook delivery that starts a Pipelines as Code build.
type ForgejoCIEvent struct {
	Repo    string
	Number  int
	Action  string
	HeadSHA string
}

// ForgejoCIBarrierBranch holds the barrier PR of each watched repository (a harness
// listing the repository's PRs leaves that one out).
const ForgejoCIBarrierBranch = "nudgeflow-ci-barrier"

// WatchCI registers a webhook of owner/name (push and pull request events) to the
// receiver, and opens the repository's barrier PR (see CIBuilds). Call it before
// anything a test counts.
func (f *Forgejo) WatchCI(owner, name string) error {
	if err := f.API(http.MethodPost, "/repos/"+esc(owner)+"/"+esc(name)+"/hooks", f.AdminToken, map[string]any{
		"type": "gitea", "active": true, "events": []string{"push", "pull_request"},
		"config": map[string]string{"url": f.ci.srv.URL, "content_type": "json"},
	}, nil); err != nil {
		return fmt.Errorf("registering the webhook of %s/%s: %w", owner, name, err)
	}
	r, err := f.repoInfo(owner, name)
	if err != nil {
		return err
	}
	if _, err := f.pushBarrier(owner, name, r.DefaultBranch, true); err != nil {
		return err
	}
	var p ForgejoPR
	if err := f.API(http.MethodPost, "/repos/"+esc(owner)+"/"+esc(name)+"/pulls", f.AdminToken, map[string]any{
		"head": ForgejoCIBarrierBranch, "base": r.DefaultBranch, "title": "CI barrier (test harness)"}, &p); err != nil {
		return fmt.Errorf("opening the barrier PR of %s/%s: %w", owner, name, err)
	}
	f.ci.mu.Lock()
	f.ci.barriers[owner+"/"+name] = p.Number
	f.ci.mu.Unlock()
	return nil
}

type repoInfo struct {
	DefaultBranch string `json:"default_branch"`
}

func (f *Forgejo) repoInfo(owner, name string) (repoInfo, error) {
	var r repoInfo
	err := f.API(http.MethodGet, "/repos/"+esc(owner)+"/"+esc(name), f.AdminToken, nil, &r)
	return r, err
}

// pushBarrier commits on the barrier branch (creating it from base when create).
func (f *Forgejo) pushBarrier(owner, name, base string, create bool) (string, error) {
	body := map[string]any{
		"message": "barrier " + randomHex(4) + " [skip ci]",
		"files": []map[string]string{{"operation": "upload", "path": ".ci-barrier",
			"content": base64.StdEncoding.EncodeToString([]byte(randomHex(8)))}},
		"author": map[string]string{"name": "Admin", "email": ForgejoAdmin + "@example.com"},
	}
	if create {
		body["branch"], body["new_branch"] = base, ForgejoCIBarrierBranch
	} else {
		body["branch"] = ForgejoCIBarrierBranch
	}
	var out struct{ Commit struct{ SHA string } }
	if err := f.API(http.MethodPost, "/repos/"+esc(owner)+"/"+esc(name)+"/contents", f.AdminToken, body, &out); err != nil {
		return "", fmt.Errorf("pushing the CI barrier of %s/%s: %w", owner, name, err)
	}
	return out.Commit.SHA, nil
}

// Settle waits until every event of what happened to owner/name before the call has
// been delivered: it pushes to the repository's barrier PR and waits for that push's
// synchronized event. Pushes are processed by one worker in order, and webhooks are
// sent by one worker in order, so earlier events arrive first. (A pushed PR's
// synchronized event is prepared in a goroutine the push starts; the barrier's starts
// after every earlier push's, and does the same work.)
func (f *Forgejo) Settle(ctx context.Context, owner, name string) error {
	sha, err := f.pushBarrier(owner, name, "", false)
	if err != nil {
		return err
	}
	f.ci.mu.Lock()
	number := f.ci.barriers[owner+"/"+name]
	f.ci.mu.Unlock()
	if number == 0 {
		return fmt.Errorf("%s/%s is not watched (WatchCI)", owner, name)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		f.ci.mu.Lock()
		seen := f.ci.synced[fmt.Sprintf("%s/%s#%d@%s", owner, name, number, sha)]
		f.ci.mu.Unlock()
		if seen {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the CI barrier of %s/%s was not delivered: %w", owner, name, ctx.Err())
		case <-f.ci.changed():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// CIBuilds settles the repository's webhooks and counts the builds Pipelines as
// Code would have started for its PRs (the barrier PR aside).
func (f *Forgejo) CIBuilds(ctx context.Context, owner, name string) (int, error) {
	ev, err := f.CIEvents(ctx, owner, name)
	return len(ev), err
}

// CIEvents settles the repository's webhooks and lists its CI-starting events.
func (f *Forgejo) CIEvents(ctx context.Context, owner, name string) ([]ForgejoCIEvent, error) {
	if err := f.Settle(ctx, owner, name); err != nil {
		return nil, err
	}
	f.ci.mu.Lock()
	defer f.ci.mu.Unlock()
	var out []ForgejoCIEvent
	for _, e := range f.ci.events {
		if e.Repo == owner+"/"+name && e.Number != f.ci.barriers[e.Repo] {
			out = append(out, e)
		}
	}
	return out, nil
}

// ciWatcher receives the webhooks and applies Pipelines as Code's rules for
// Gitea/Forgejo (package pac: GiteaBuilds, then Decide): an event that builds
// starts one unless the head commit's message holds a skip marker, read through the
// API when the event arrives, as PaC's GetCommitInfo does. The test server trusts
// every author (no ACL). Pushes to a PR branch match no Konflux PipelineRun (they
// build pushes to the default branch only), so they are not builds.
type ciWatcher struct {
	f   *Forgejo
	srv *loopbackServer

	mu       sync.Mutex
	events   []ForgejoCIEvent
	synced   map[string]bool // "owner/name#n@sha" of every synchronized event
	barriers map[string]int
	notify   chan struct{}
}

func newCIWatcher(f *Forgejo) *ciWatcher {
	w := &ciWatcher{f: f, synced: map[string]bool{}, barriers: map[string]int{}, notify: make(chan struct{})}
	w.srv = newLoopbackServer(http.HandlerFunc(w.receive))
	return w
}

// loopbackServer is an HTTP server on a free loopback port (httptest's, without
// its test flags in the binaries that import this package).
type loopbackServer struct {
	URL string
	srv *http.Server
}

func newLoopbackServer(h http.Handler) *loopbackServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("localenv: listening on loopback: %v", err))
	}
	s := &loopbackServer{URL: "http://" + l.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(l) }()
	return s
}

// Close stops the server.
func (s *loopbackServer) Close() { _ = s.srv.Close() }

func (w *ciWatcher) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.notify
}

func (w *ciWatcher) receive(rw http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	rw.WriteHeader(http.StatusOK)
	typ := r.Header.Get("X-Gitea-Event-Type")
	if typ != "pull_request" && typ != "pull_request_sync" {
		return
	}
	var ev forgehook.PullRequestPayload
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	repo, sha := ev.Repository.FullName, ev.PullRequest.Head.SHA
	build := false
	if pac.GiteaBuilds(ev.Action) {
		owner, name, _ := strings.Cut(repo, "/")
		c, err := w.f.Commit(owner, name, sha)
		build = err == nil && pac.Decide(pac.Event{Builds: true, HeadMessage: c.Message}, pac.ACL{}) == pac.Run
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.Action == "synchronize" || ev.Action == "synchronized" {
		w.synced[repo+"#"+strconv.Itoa(ev.Number)+"@"+sha] = true
	}
	if build {
		w.events = append(w.events, ForgejoCIEvent{Repo: repo, Number: ev.Number, Action: ev.Action, HeadSHA: sha})
	}
	close(w.notify)
	w.notify = make(chan struct{})
}
