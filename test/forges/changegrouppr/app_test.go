package changegrouppr_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

// TestGitHubAppTokenScopedToTheRepository: without a basic-auth Secret the
// activities authenticate as the GitHub App (build-service's Secret), and every
// write uses an installation token limited to the one nudged repository.
func TestGitHubAppTokenScopedToTheRepository(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	emu := githubemu.New()
	t.Cleanup(emu.Close)
	emu.RegisterApp(4242, "nudgeflow-app", &key.PublicKey)
	emu.CreateRepo("org", "bundle", "main", map[string]string{"bundle/manifests/csv.yaml": "image: quay.io/org/op@" + old["op"] + "\n"})
	emu.CreateRepo("org", "unrelated", "main", map[string]string{"README.md": "other\n"})
	appSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: forge.DefaultAppSecret.Name, Namespace: forge.DefaultAppSecret.Namespace},
		Data:       map[string][]byte{forge.KeyAppID: []byte("4242"), forge.KeyAppPrivateKey: keyPEM},
	}
	runner := newActivityEnv(t, changegrouppr.Config{AppTokens: &ghforge.AppTokens{}}, emu.URL()+"/org/bundle", appSecret)
	env := runner.env

	req := changegroupprapi.SyncRequest{
		Repo:   changegroupprapi.Repo{Provider: "github", URL: emu.URL() + "/org/bundle", Namespace: "tenant"},
		Branch: "konflux/changegroup/cg1", Namespace: "tenant", ChangeGroup: "cg1", NudgedComponent: "bundle",
		Rows: []changegroupprapi.Row{{Component: "operator", Image: "quay.io/org/op", Current: old["op"], New: digest("9"), State: "Ready"}},
		Mode: changegroupprapi.ModeHold,
	}
	v, err := env.ExecuteActivity(changegroupprapi.SyncActivity, req)
	if err != nil {
		t.Fatalf("sync as the App: %v", err)
	}
	var o changegroupprapi.Observed
	if err := v.Get(&o); err != nil {
		t.Fatal(err)
	}
	p, ok := emu.PR("org", "bundle", o.PR.Number)
	if !ok || !p.Draft {
		t.Fatalf("want a draft PR, got %+v", p)
	}
	head, _ := emu.Head("org", "bundle", p.Head)
	if want := emu.AppBotUser().Email; head.AuthorEmail != want || !strings.HasPrefix(want, fmt.Sprintf("%d+", githubemu.AppBotUserID(4242))) {
		t.Errorf("commit author %q, want the App's bot %q", head.AuthorEmail, want)
	}
	scopes := emu.WriteScopes()
	if len(scopes) == 0 {
		t.Fatal("no writes recorded")
	}
	for _, s := range scopes {
		if s != "org/bundle" {
			t.Errorf("a write used a token scoped to %q, want only org/bundle", s)
		}
	}

	// Every other activity of a ChangeGroup, through the emulator that holds the
	// token to its permissions (a missing one fails here): the release, its CI
	// (check runs and the combined status), a comment, the close. One token for all
	// of them, polls included: minted once, for org/bundle alone, with nothing but
	// contents and pull_requests write, checks and statuses read.
	run := func(name string, req any) {
		t.Helper()
		if _, err := env.ExecuteActivity(name, req); err != nil {
			t.Fatalf("%s as the App: %v", name, err)
		}
	}
	req.Mode, req.Known = changegroupprapi.ModeRelease, o.PR
	run(changegroupprapi.SyncActivity, req)
	for range 3 {
		run(changegroupprapi.ObserveActivity, changegroupprapi.ObserveRequest{Repo: req.Repo, Branch: req.Branch, Known: o.PR})
	}
	run(changegroupprapi.CIActivity, changegroupprapi.CIRequest{Repo: req.Repo, Known: o.PR})
	run(changegroupprapi.CommentActivity, changegroupprapi.CommentRequest{Repo: req.Repo, Known: o.PR, Key: "ci-not-started", Body: "CI did not start"})
	run(changegroupprapi.CloseActivity, changegroupprapi.CloseRequest{Repo: req.Repo, Known: o.PR, Comment: "cancelled"})
	mints := emu.TokenMints()
	if len(mints) != 1 {
		t.Fatalf("%d tokens minted for 8 activities, want 1: %+v", len(mints), mints)
	}
	want := map[string]string{"contents": "write", "pull_requests": "write", "checks": "read", "statuses": "read"}
	if fmt.Sprint(mints[0].Repositories) != "[org/bundle]" || !maps.Equal(mints[0].Permissions, want) {
		t.Errorf("minted %+v, want org/bundle with %v", mints[0], want)
	}
	// The commit identity's bot user id is read with the token and cached with it:
	// one GET /users per token minted, not one per activity.
	userReads := 0
	for _, r := range emu.Requests() {
		if strings.HasPrefix(r, "GET /api/v3/users/") {
			userReads++
		}
	}
	if userReads != 1 {
		t.Errorf("%d reads of the App's bot user for one token, want 1", userReads)
	}

	// Another tenant's ChangeGroup on the same repository, first without a claim,
	// then with a Repository of its own made after the owner's: refused before any
	// token (the cached one included) is used, nothing written, and a Warning Event
	// on its ChangeGroup says what to create.
	writes := len(emu.WritesTo("org", "bundle"))
	attack := req
	attack.Repo.Namespace, attack.Namespace, attack.ChangeGroup, attack.Known = "attacker", "attacker", "steal", changegroupprapi.PRRef{}
	for _, claim := range []bool{false, true} {
		if claim {
			runner.own("attacker", emu.URL()+"/org/bundle.git", time.Now())
		}
		_, err := env.ExecuteActivity(changegroupprapi.SyncActivity, attack)
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != ownership.ErrorType || !ae.NonRetryable() {
			t.Fatalf("another tenant's sync (claim %v): %v", claim, err)
		}
	}
	if len(emu.TokenMints()) != 1 || len(emu.WritesTo("org", "bundle")) != writes {
		t.Fatalf("the attacker got a token or wrote: %d mints, writes %v", len(emu.TokenMints()), emu.WritesTo("org", "bundle")[writes:])
	}
	var events corev1.EventList
	if err := runner.k8s.List(context.Background(), &events, client.InNamespace("attacker")); err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Reason != ownership.EventReason || events.Items[0].InvolvedObject.Kind != "ChangeGroup" ||
		events.Items[0].InvolvedObject.Name != "steal" || events.Items[0].Type != corev1.EventTypeWarning {
		t.Fatalf("events %+v", events.Items)
	}
}
