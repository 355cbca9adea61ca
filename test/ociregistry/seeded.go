package ociregistry

import (
	"context"
	"crypto/x509"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// SeededImage is the image a seed names: one layer holding the seed's bytes and
// nothing that varies (no random bytes, no timestamps), so a seed is always the
// same image with the same digest. The dev stack's simulated builds name their
// digests from their seeds, and the stack pushes them again after a restart
// (the registry keeps its content in memory).
func SeededImage(seed string) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer([]byte(seed), types.DockerLayer))
	if err != nil {
		return nil, fmt.Errorf("make the image of seed %q: %w", seed, err)
	}
	return img, nil
}

// SeededDigest is SeededImage(seed)'s manifest digest, "sha256:...".
func SeededDigest(seed string) (string, error) {
	img, err := SeededImage(seed)
	if err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("digest of the image of seed %q: %w", seed, err)
	}
	return d.String(), nil
}

// PushSeeded pushes SeededImage(seed) to repo:tag ("ns/operand:tag") and returns
// its digest.
func (r *Registry) PushSeeded(ctx context.Context, repoTag, seed string) (string, error) {
	img, err := SeededImage(seed)
	if err != nil {
		return "", err
	}
	return r.write(ctx, repoTag, func(ref name.Reference, opts ...remote.Option) error { return remote.Write(ref, img, opts...) }, img.Digest)
}

// Dial is a client of a registry another process serves at host
// ("127.0.0.1:port"), trusting roots: `nudgeflow-dev dev build` pushes to the
// dev stack's registry through it. Close does nothing on it.
func Dial(host string, roots *x509.CertPool) *Registry {
	return &Registry{Host: host, roots: roots}
}
