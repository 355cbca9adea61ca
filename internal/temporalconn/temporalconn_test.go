package temporalconn

import (
	"testing"

	"go.temporal.io/sdk/client"
)

// Every value of --temporal-grpc-compression maps to the SDK's setting; empty is
// the flag's default, and an unknown value is an error naming the choices.
func TestCompression(t *testing.T) {
	for name, want := range map[string]client.GrpcCompression{
		"": &client.GrpcCompressionNone{}, compressionNone: &client.GrpcCompressionNone{}, compressionGzip: &client.GrpcCompressionGzip{},
	} {
		got, err := compression(name)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if gotT, wantT := typeName(got), typeName(want); gotT != wantT {
			t.Errorf("%q: got %s, want %s", name, gotT, wantT)
		}
	}
	if _, err := compression("zstd"); err == nil {
		t.Fatal("zstd: want an error")
	}
}

func typeName(c client.GrpcCompression) string {
	switch c.(type) {
	case *client.GrpcCompressionNone:
		return "none"
	case *client.GrpcCompressionGzip:
		return "gzip"
	}
	return "other"
}
