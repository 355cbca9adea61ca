package pullrequest

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/forge"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	glforge "github.com/nudgeflow/nudgeflow/internal/forge/gitlab"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/pac"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
)

// Config configures the activities.
type Config struct {
	// Bot is the commit identity for basic-auth credentials; empty derives
	// "<username> <<username>@users.noreply.<host>>" from the Secret's username.
	// Commits whose author or committer email differs from the bot's are human edits.
	Bot forge.Signature
	// AppSecret is the GitHub App Secret; zero means forge.DefaultAppSecret.
	AppSecret types.NamespacedName
	// Transport is the HTTP round tripper for forge calls (http.DefaultTransport when nil).
	Transport http.RoundTripper
	// Ownership says whether the request's namespace owns the repository, which it
	// must before any credential is read or token minted for it; nil checks with
	// the activities' reader, without the cluster admin's bindings and without
	// Events.
	Ownership *ownership.Checker
	// AppTokens mints and caches the GitHub App's tokens
	// (ghforge.DefaultAppTokens when nil).
	AppTokens *ghforge.AppTokens
}

// Activities are the pull request activities. They read credentials from Kubernetes
// Secrets at call time; no credential is ever in a request, a result, an error or a log.
type Activities struct {
	k8s client.Reader
	cfg Config
}

// New returns the activities; k8s needs get/list on Secrets.
func New(k8s client.Reader, cfg Config) *Activities {
	if cfg.AppSecret.Name == "" {
		cfg.AppSecret = forge.DefaultAppSecret
	}
	if cfg.Ownership == nil {
		cfg.Ownership = &ownership.Checker{Reader: k8s}
	}
	if cfg.AppTokens == nil {
		cfg.AppTokens = ghforge.DefaultAppTokens
	}
	return &Activities{k8s: k8s, cfg: cfg}
}

// Register registers the activities under their contract names (a worker.Worker or a
// test activity environment).
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.SyncPullRequest, activity.RegisterOptions{Name: SyncActivity})
	r.RegisterActivityWithOptions(a.ObservePullRequest, activity.RegisterOptions{Name: ObserveActivity})
	r.RegisterActivityWithOptions(a.ClosePullRequest, activity.RegisterOptions{Name: CloseActivity})
	r.RegisterActivityWithOptions(a.ReadPullRequestCI, activity.RegisterOptions{Name: CIActivity})
	r.RegisterActivityWithOptions(a.CommentOnPullRequest, activity.RegisterOptions{Name: CommentActivity})
}

// connectors open a client for each provider nudgeflow speaks (forge.Provider's
// names); a new forge adds one entry.
var connectors = map[string]func(ctx context.Context, a *Activities, r Repo, repo forge.Repo) (forge.Forge, []string, error){
	forge.ProviderGitHub:  connectGitHub,
	forge.ProviderGitLab:  connectGitLab,
	forge.ProviderForgejo: connectForgejo,
}

// connect finds the credentials for the repository and returns a forge client and the
// secret values that must never appear in an error. First of all, the request's
// namespace must own the repository (internal/ownership): a refusal is a
// non-retryable RepositoryNotOwned, recorded as a Warning Event on the object on
// refers to (nil: none), and no credential is read.
func (a *Activities) connect(ctx context.Context, r Repo, on *corev1.ObjectReference) (forge.Forge, []string, error) {
	provider := forge.NormalizeProvider(r.Provider)
	open, ok := connectors[provider]
	if !ok {
		return nil, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("provider %q is not supported yet", r.Provider), "UnsupportedProvider", nil)
	}
	repo, err := forge.ParseRepoURL(r.URL)
	if err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidRepository", nil)
	}
	if err := a.cfg.Ownership.Require(ctx, r.Namespace, r.URL, on); err != nil {
		if ownership.IsRefusal(err) {
			activity.GetLogger(ctx).Warn("refused: the namespace does not own the repository", "namespace", r.Namespace, "repo", r.URL, "error", err)
		}
		return nil, nil, err
	}
	// Each forge request heartbeats first: a sync is many requests, and the sync
	// activity's heartbeat timeout (a minute) bounds the time between two.
	hb := *a
	hb.cfg.Transport = heartbeatTransport{ctx: ctx, base: a.cfg.Transport}
	return open(ctx, &hb, r, repo)
}

// heartbeatTransport records an activity heartbeat before each request it sends.
type heartbeatTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (h heartbeatTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if activity.IsActivity(h.ctx) {
		activity.RecordHeartbeat(h.ctx)
	}
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// noCredentials explains where credentials are looked up.
func noCredentials(r Repo, repo forge.Repo, alsoApp bool) error {
	app := ""
	if alsoApp {
		app = " and no GitHub App"
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"no credentials for %s: no basic-auth Secret labelled %s=scm, %s=<host> in namespace %s%s",
		repo.Host, forge.LabelCredentials, forge.LabelSCMHost, r.Namespace, app), "NoCredentials", nil)
}

// basicAuthBot is the configured bot, else "<username> <<username>@users.noreply.<host>>".
func (a *Activities) basicAuthBot(repo forge.Repo, ba forge.BasicAuth) forge.Signature {
	if a.cfg.Bot.Email != "" {
		return a.cfg.Bot
	}
	host := repo.Host
	if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	return forge.Signature{Name: ba.Username, Email: ba.Username + "@users.noreply." + host}
}

// requireBasicAuth is the basic-auth Secret of a forge that has no other kind of
// credentials (GitLab, Forgejo): none is a non-retryable NoCredentials.
func (a *Activities) requireBasicAuth(ctx context.Context, r Repo, repo forge.Repo) (forge.BasicAuth, error) {
	ba, ok, err := forge.FindBasicAuth(ctx, a.k8s, r.Namespace, repo)
	if err != nil {
		return forge.BasicAuth{}, err
	}
	if !ok {
		return forge.BasicAuth{}, noCredentials(r, repo, false)
	}
	activity.GetLogger(ctx).Debug("using basic-auth credentials", "repo", repo.FullName(), "secret", ba.Secret)
	return ba, nil
}

// connectGitLab uses a basic-auth Secret whose password is a personal, project or
// group access token (Konflux's GitLab SCM Secrets). Without a configured bot the
// commit identity is the token's user, as GitLab records it as the committer.
func connectGitLab(ctx context.Context, a *Activities, r Repo, repo forge.Repo) (forge.Forge, []string, error) {
	ba, err := a.requireBasicAuth(ctx, r, repo)
	if err != nil {
		return nil, nil, err
	}
	f, err := glforge.New(ctx, forge.ClientOptions{Repo: repo, Token: ba.Password, Bot: a.cfg.Bot, Transport: a.cfg.Transport})
	if err != nil {
		return nil, []string{ba.Password}, err
	}
	return f, []string{ba.Password}, nil
}

func connectGitHub(ctx context.Context, a *Activities, r Repo, repo forge.Repo) (forge.Forge, []string, error) {
	ba, ok, err := forge.FindBasicAuth(ctx, a.k8s, r.Namespace, repo)
	if err != nil {
		return nil, nil, err
	}
	if ok {
		activity.GetLogger(ctx).Debug("using basic-auth credentials", "repo", repo.FullName(), "secret", ba.Secret)
		f, err := ghforge.New(forge.ClientOptions{Repo: repo, Token: ba.Password, Bot: a.basicAuthBot(repo, ba), Transport: a.cfg.Transport})
		return f, []string{ba.Password}, err
	}
	app, ok, err := forge.FindApp(ctx, a.k8s, a.cfg.AppSecret)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, noCredentials(r, repo, true)
	}
	tok, err := a.cfg.AppTokens.Token(ctx, repo, app, a.cfg.Transport, 0)
	if err != nil {
		return nil, nil, err
	}
	bot := tok.Bot
	if a.cfg.Bot.Email != "" {
		bot = a.cfg.Bot
	}
	f, err := ghforge.New(forge.ClientOptions{Repo: repo, Token: tok.Token, Bot: bot, Transport: a.cfg.Transport})
	return f, []string{tok.Token, string(app.PrivateKey)}, err
}

// redact guarantees that no secret value leaves an activity inside an error.
func redact(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	leaked := false
	for _, s := range secrets {
		if len(s) >= 4 && strings.Contains(msg, s) {
			msg, leaked = strings.ReplaceAll(msg, s, "[REDACTED]"), true
		}
	}
	if !leaked {
		return err
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return temporal.NewApplicationErrorWithOptions(msg, ae.Type(), temporal.ApplicationErrorOptions{
			NonRetryable: ae.NonRetryable(), NextRetryDelay: ae.NextRetryDelay()})
	}
	return errors.New(msg)
}

func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), "InvalidRequest", nil)
}

// ---- shared reading ----

// state is what the forge says about the PR and its branch.
type state struct {
	pr      forge.PR
	found   bool
	head    forge.Commit
	hasHead bool
	body    prbody.Parsed
}

func (a *Activities) read(ctx context.Context, f forge.Forge, branch string, number int) (state, error) {
	var st state
	var err error
	st.pr, st.found, err = f.FindPR(ctx, branch, number)
	if err != nil || !st.found {
		return st, err
	}
	st.body = prbody.Parse(st.pr.Body)
	if st.pr.Open {
		st.head, st.hasHead, err = f.BranchHead(ctx, st.pr.Head)
	} else if st.pr.HeadSHA != "" {
		st.head, err = f.Commit(ctx, st.pr.HeadSHA)
		st.hasHead = err == nil
	}
	return st, err
}

// noDraft: the PR was opened as a normal PR because the repository allows no drafts.
func noDraft(st state) bool { return st.body.State != nil && st.body.State.NoDraft }

// isDraft reports whether the PR is held as a draft would be: a real draft, or a
// normal PR in a repository without drafts (held by the skip marker alone).
func isDraft(st state) bool { return st.pr.Draft || noDraft(st) }

// isBot: the bot authored c, and committed it, or the forge recorded its API
// identity as committer (GitLab writes every commit as the token's user, with its
// commit email, whatever author nudgeflow names).
func isBot(f forge.Forge, c forge.Commit) bool {
	bot := f.Bot().Email
	if bot == "" || !strings.EqualFold(c.Author.Email, bot) {
		return false
	}
	if strings.EqualFold(c.Committer.Email, bot) {
		return true
	}
	bc, ok := f.(forge.BotCommitter)
	return ok && bc.BotCommitter().Email != "" && strings.EqualFold(c.Committer.Email, bc.BotCommitter().Email)
}

// humanEdit returns why automated updates must stop, and a key that identifies this
// particular edit (so one comment is posted per edit).
func humanEdit(f forge.Forge, st state) (reason, key string) {
	if st.hasHead && !isBot(f, st.head) {
		who := st.head.Author.Email
		if isBotSig(f, st.head.Author) {
			who = st.head.Committer.Email
		}
		return fmt.Sprintf("commit %s on the branch was made by %s, not by nudgeflow", short(st.head.SHA), who), "commit-" + st.head.SHA
	}
	if st.body.HumanEdited {
		sum := sha256.Sum256([]byte(st.body.Section))
		return "the section of the description nudgeflow manages was edited", "body-" + hex.EncodeToString(sum[:8])
	}
	return "", ""
}

func isBotSig(f forge.Forge, s forge.Signature) bool {
	return strings.EqualFold(s.Email, f.Bot().Email)
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// observed fills what a read says; held tells whether the group is holding CI.
func observed(f forge.Forge, st state, known PRRef, held bool) Observed {
	o := Observed{PR: known}
	if !st.found {
		return o
	}
	o.PR.Number, o.PR.URL, o.PR.NodeID = st.pr.Number, st.pr.URL, st.pr.NodeID
	switch {
	case st.pr.Merged:
		o.State = PRMerged
	case st.pr.Open:
		o.State = PROpen
	default:
		o.State = PRClosed
	}
	o.Draft = st.pr.Draft
	if st.hasHead {
		o.HeadSHA = st.head.SHA
		o.HeadHasSkipMarker = pac.HasSkipMarker(st.head.Message)
		if isBot(f, st.head) {
			o.PR.LastPushedSHA = st.head.SHA
		}
	}
	o.RebaseRequested, o.ReleaseRequested = st.body.Rebase, st.body.ReleaseNow
	if st.pr.Open {
		o.HumanEditReason, _ = humanEdit(f, st)
		o.HumanEdits = o.HumanEditReason != ""
		o.MarkedReadyByHuman = held && (!isDraft(st) || !st.body.SkipMarker)
	}
	return o
}

// ---- Observe ----

// ObservePullRequest reads the PR without writing.
func (a *Activities) ObservePullRequest(ctx context.Context, req ObserveRequest) (Observed, error) {
	f, secrets, err := a.connect(ctx, req.Repo, nil)
	if err != nil {
		return Observed{}, redact(err, secrets)
	}
	st, err := a.read(ctx, f, req.Branch, req.Known.Number)
	if err != nil {
		return Observed{}, redact(err, secrets)
	}
	held := st.body.State != nil && st.body.State.Mode == string(ModeHold)
	o := observed(f, st, req.Known, held)
	o.Writes = f.Writes()
	return o, nil
}

// ---- Close ----

const closeMarker = "<!-- nudgeflow:closed -->"

// ClosePullRequest comments (once) and closes the PR; a closed or merged PR is left alone.
func (a *Activities) ClosePullRequest(ctx context.Context, req CloseRequest) (Observed, error) {
	f, secrets, err := a.connect(ctx, req.Repo, nil)
	if err != nil {
		return Observed{}, redact(err, secrets)
	}
	o, err := a.close(ctx, f, req)
	o.Writes = f.Writes()
	return o, redact(err, secrets)
}

func (a *Activities) close(ctx context.Context, f forge.Forge, req CloseRequest) (Observed, error) {
	if req.Known.Number <= 0 {
		return Observed{PR: req.Known}, nil // no PR was ever opened
	}
	st, err := a.read(ctx, f, "", req.Known.Number)
	if err != nil || !st.found || !st.pr.Open {
		return observed(f, st, req.Known, false), err
	}
	if req.Comment != "" {
		if err := ensureComment(ctx, f, st.pr.Number, closeMarker, req.Comment); err != nil {
			return Observed{}, err
		}
	}
	if _, err := f.EditPR(ctx, st.pr.Number, nil, new(false)); err != nil {
		return Observed{}, err
	}
	activity.GetLogger(ctx).Info("closed pull request", "pr", st.pr.Number)
	st, err = a.read(ctx, f, "", req.Known.Number)
	return observed(f, st, req.Known, false), err
}

// ensureComment posts marker+"\n"+text unless a comment already holds marker.
func ensureComment(ctx context.Context, f forge.Forge, number int, marker, text string) error {
	_, err := ensureCommentPosted(ctx, f, number, marker, text)
	return err
}

// ensureCommentPosted is ensureComment, and says whether it posted.
func ensureCommentPosted(ctx context.Context, f forge.Forge, number int, marker, text string) (bool, error) {
	cs, err := f.Comments(ctx, number)
	if err != nil {
		return false, err
	}
	for _, c := range cs {
		if strings.Contains(c.Body, marker) {
			return false, nil
		}
	}
	if err := f.CreateComment(ctx, number, marker+"\n"+text); err != nil {
		return false, err
	}
	return true, nil
}

// gitBlobSHA is git's object name of a blob, so desired trees are compared without
// writing anything.
func gitBlobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}
