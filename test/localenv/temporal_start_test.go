package localenv

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
)

// TestStartTemporalRetriesOnFreshPorts: a frontend port that another process's gRPC
// server takes before the dev server binds it (what CI saw: "unknown service
// temporal.api.workflowservice.v1.WorkflowService") costs one attempt; the next
// starts on a fresh port and answers.
func TestStartTemporalRetriesOnFreshPorts(t *testing.T) {
	if _, err := TemporalCLI(); err != nil {
		t.Fatalf("this test starts the real dev server: %v", err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	squatter := grpc.NewServer() // no WorkflowService registered
	go func() { _ = squatter.Serve(taken) }()
	t.Cleanup(squatter.Stop)
	takenPort := taken.Addr().(*net.TCPAddr).Port

	var handedOut []int
	freePort = func() (int, error) {
		if len(handedOut) == 0 {
			handedOut = append(handedOut, takenPort)
			return takenPort, nil
		}
		p, err := FreePort()
		handedOut = append(handedOut, p)
		return p, err
	}
	attemptTimeout = 20 * time.Second
	t.Cleanup(func() { freePort, attemptTimeout = FreePort, 0 })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := StartTemporal(ctx, TemporalOptions{})
	require.NoError(t, err, "the second attempt starts on a fresh port")
	t.Cleanup(func() { _ = srv.Stop() })
	require.Greater(t, len(handedOut), 1, "the taken port cost an attempt")
	require.NotEqual(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(takenPort)), srv.Address, "the server runs on a fresh port")
	c, err := srv.Dial()
	require.NoError(t, err)
	defer c.Close()
	_, err = c.CheckHealth(ctx, nil)
	require.NoError(t, err, "the server answers on its port")
}
