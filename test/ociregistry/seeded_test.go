package ociregistry

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A seed names one image: its digest is known before the push, the same on every
// push (a restarted dev stack pushes its builds again), and another seed's differs.
// A client from Dial pushes to a registry another process serves.
func TestSeededImageHasTheDigestItsSeedNames(t *testing.T) {
	r := startTestRegistry(t)
	ctx := context.Background()
	want, err := SeededDigest("demo/operand-a-1")
	require.NoError(t, err)
	again, err := SeededDigest("demo/operand-a-1")
	require.NoError(t, err)
	require.Equal(t, want, again)
	other, err := SeededDigest("demo/operand-a-2")
	require.NoError(t, err)
	require.NotEqual(t, want, other)

	client := Dial(r.Host, r.roots)
	got, err := client.PushSeeded(ctx, "demo/operand-a:on-push-1", "demo/operand-a-1")
	require.NoError(t, err)
	require.Equal(t, want, got)
	resolved, err := r.Resolve(ctx, "demo/operand-a:on-push-1")
	require.NoError(t, err)
	require.Equal(t, want, resolved)
	require.NoError(t, client.Close())
}
