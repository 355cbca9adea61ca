package ociregistry

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/stretchr/testify/require"
)

func startTestRegistry(t *testing.T) *Registry {
	t.Helper()
	r, _, err := StartWithNewCA("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

func TestPushedImageResolvesToItsDigestOverTLS(t *testing.T) {
	r := startTestRegistry(t)
	ctx := context.Background()
	first, err := r.PushImage(ctx, "ns/operand:v1")
	require.NoError(t, err)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, first)
	got, err := r.Resolve(ctx, "ns/operand:v1")
	require.NoError(t, err)
	require.Equal(t, first, got)

	second, err := r.PushImage(ctx, "ns/operand:v1")
	require.NoError(t, err)
	require.NotEqual(t, first, second, "every push is a new build with a new digest")
	got, err = r.Resolve(ctx, "ns/operand:v1")
	require.NoError(t, err)
	require.Equal(t, second, got, "the tag moves to the newest push")
}

func TestPushedIndexResolvesToTheIndexDigest(t *testing.T) {
	r := startTestRegistry(t)
	ctx := context.Background()
	digest, err := r.PushIndex(ctx, "ns/multi:v1", "linux/amd64", "linux/arm64")
	require.NoError(t, err)
	got, err := r.Resolve(ctx, "ns/multi:v1")
	require.NoError(t, err)
	require.Equal(t, digest, got)
}

func TestClientsWithoutTheCARefuseTheRegistry(t *testing.T) {
	r := startTestRegistry(t)
	other, err := NewCA()
	require.NoError(t, err)
	r.roots = other.Pool()
	_, err = r.Resolve(context.Background(), "ns/operand:v1")
	require.ErrorContains(t, err, "certificate", "the registry really serves TLS with the given certificate")
}

func TestPrivateRegistryAnswersOnlyWithItsCredentials(t *testing.T) {
	ca, err := NewCA()
	require.NoError(t, err)
	cert, err := ca.ServingCert("127.0.0.1")
	require.NoError(t, err)
	r, err := StartPrivate("127.0.0.1:0", cert, ca.Pool(), "puller", "s3cret")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	ctx := context.Background()
	digest, err := r.PushImage(ctx, "ns/private:v1")
	require.NoError(t, err, "the push helpers log in")
	got, err := r.Resolve(ctx, "ns/private:v1")
	require.NoError(t, err)
	require.Equal(t, digest, got)

	anonymous := *r
	anonymous.auth = nil
	_, err = anonymous.Resolve(ctx, "ns/private:v1")
	require.ErrorContains(t, err, "401", "without credentials the registry refuses")
	wrong := *r
	wrong.auth = &authn.Basic{Username: "puller", Password: "wrong"}
	_, err = wrong.Resolve(ctx, "ns/private:v1")
	require.ErrorContains(t, err, "401")
}

func TestHoldKeepsRequestsForOneRepositoryUntilReleased(t *testing.T) {
	r := startTestRegistry(t)
	ctx := context.Background()
	digest, err := r.PushImage(ctx, "ns/held:v1")
	require.NoError(t, err)
	_, err = r.PushImage(ctx, "ns/free:v1")
	require.NoError(t, err)

	reached, release := r.Hold("ns/held")
	resolved := make(chan string, 1)
	go func() {
		d, _ := r.Resolve(ctx, "ns/held:v1")
		resolved <- d
	}()
	<-reached
	_, err = r.Resolve(ctx, "ns/free:v1")
	require.NoError(t, err, "other repositories are served while one is held")
	select {
	case <-resolved:
		t.Fatal("a held request was answered before the release")
	default:
	}
	release()
	require.Equal(t, digest, <-resolved)
	release() // twice is harmless
}
