// Package temporalconn holds the gRPC settings nudgeflow's Temporal clients share
// (the bridge, the worker, the CLI, and `nudgeflow-dev bench`, which must measure the
// bridge's own client).
package temporalconn

import (
	"fmt"

	"go.temporal.io/sdk/client"
)

// Values of --temporal-grpc-compression.
const (
	compressionNone = "none"
	compressionGzip = "gzip"
)

// DefaultCompression: none. The SDK's default gzips every request, and the server
// then gzips its answers (workflow task histories included): in `nudgeflow-dev bench`
// gzip was 40% of the bridge's CPU per SignalWithStart (a request of about 1 KB),
// paid again by the server to inflate it. nudgeflow talks to a Temporal frontend
// in or near its cluster, where that CPU costs more than the bytes; gzip is for a
// slow or metered link (--temporal-grpc-compression=gzip).
const DefaultCompression = compressionNone

// compression is the SDK's setting for a --temporal-grpc-compression value (empty:
// DefaultCompression, as the flag's default).
func compression(name string) (client.GrpcCompression, error) {
	if name == "" {
		name = DefaultCompression
	}
	switch name {
	case compressionNone:
		return &client.GrpcCompressionNone{}, nil
	case compressionGzip:
		return &client.GrpcCompressionGzip{}, nil
	}
	return nil, fmt.Errorf("gRPC compression %q: want %q or %q", name, compressionNone, compressionGzip)
}

// Apply sets the compression on opts.
func Apply(opts *client.Options, name string) error {
	c, err := compression(name)
	if err != nil {
		return err
	}
	opts.ConnectionOptions.GrpcCompression = c
	return nil
}
