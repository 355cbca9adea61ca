package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// The flood: floodConns connections at once, each POSTing floodRounds
// unauthenticated deliveries of floodBodyMiB each, half announcing their length
// (refused unread) and half streamed without one (read up to the receiver's
// limit). What a client on the internet can send without any secret.
const (
	floodConns   = 64
	floodRounds  = 4
	floodBodyMiB = 16
)

// zeros is an endless body of bytes that costs the client nothing to send.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// peakRSSMiB is a process's peak resident set (VmHWM), in MiB, from /proc.
func peakRSSMiB(t *testing.T, pid int) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			require.NoError(t, err)
			return (kb + 1023) / 1024
		}
	}
	t.Fatalf("/proc/%d/status has no VmHWM", pid)
	return 0
}

// A flood of large unauthenticated deliveries against the receiver as it ships
// (its Deployment's container as written, in its own process, over HTTPS), while
// the API server calls the bridge's admission webhook throughout (a ChangeGroup
// dry-run create: failurePolicy Fail, so an unanswered call is an error): the
// receiver stays within its container's memory limit (its peak RSS, read by the
// kernel), refuses every delivery, answers a real one after, and admission never
// fails. No time is asserted.
func TestReceiverFlood(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	c := shippedCluster(t)
	ns := w.Namespace(t)
	create := creator(t, ns)
	create(newComponent("bundle", "https://github.com/org/bundle"))
	create(newComponent("operand", "", "bundle"))
	group := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flood-admission"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}}}}
	admit := func() error { return w.Kube.Create(ctx, group.DeepCopy(), ctrlclient.DryRunAll) }
	require.NoError(t, admit(), "the bridge admits the probe group before the flood")
	before := peakRSSMiB(t, c.receiver.cmd.Process.Pid)

	// Admission, throughout the flood and once after it.
	var admissions, admissionErrors atomic.Int64
	stop := make(chan struct{})
	admitted := make(chan struct{})
	go func() {
		defer close(admitted)
		for {
			select {
			case <-stop:
				return
			default:
			}
			admissions.Add(1)
			if err := admit(); err != nil {
				admissionErrors.Add(1)
				t.Errorf("admission during the flood: %v", err)
			}
		}
	}()

	client := receiverClient(t)
	url := c.receiverURL(t)
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	for i := range floodConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range floodRounds {
				req, err := http.NewRequest(http.MethodPost, url, io.LimitReader(zeros{}, floodBodyMiB<<20))
				if err != nil {
					panic(err)
				}
				req.ContentLength = -1 // streamed, chunked
				if i%2 == 0 {
					req.ContentLength = floodBodyMiB << 20
				}
				req.Header.Set("X-GitHub-Event", "pull_request")
				req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
				outcome := "closed" // the receiver closed the connection while the body was sent
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					outcome = strconv.Itoa(resp.StatusCode)
				} else if errors.Is(err, context.DeadlineExceeded) {
					outcome = "timeout"
				}
				mu.Lock()
				outcomes[outcome]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	admissionsDuringFlood := admissions.Load()
	close(stop)
	<-admitted
	require.NoError(t, admit(), "the bridge admits after the flood")

	peak := peakRSSMiB(t, c.receiver.cmd.Process.Pid)
	limit := c.receiver.container.Resources.Limits.Memory().Value() >> 20
	posts := floodConns * floodRounds
	fmt.Printf("receiver-flood posts=%d body_mib=%d receiver_peak_rss_mib=%d admission_errors=%d\n", posts, floodBodyMiB, peak, admissionErrors.Load())
	t.Logf("outcomes %v; %d admissions during the flood; peak RSS %d MiB before, %d MiB after (limit %d MiB)", outcomes, admissionsDuringFlood, before, peak, limit)

	require.False(t, c.receiver.exited(), "the receiver survived")
	require.Zero(t, admissionErrors.Load(), "admission never failed")
	require.Positive(t, admissionsDuringFlood, "admission was called during the flood")
	require.Less(t, int64(peak), limit, "the receiver's peak RSS stays under its container's memory limit")
	total := 0
	for o, n := range outcomes {
		require.NotEqual(t, "timeout", o, "every delivery was answered or cut, none left hanging")
		require.False(t, strings.HasPrefix(o, "2"), "no unauthenticated delivery accepted: %v", outcomes)
		total += n
	}
	require.Equal(t, posts, total)
	require.Positive(t, outcomes["413"], "oversized deliveries were answered 413: %v", outcomes)
	// And it serves again: an unsigned delivery is refused as before the flood.
	// Not at once: the flood's last connections hold their slots while the server
	// closes them (a lingering close), and a connection beyond MaxConns is closed
	// on accept, by design.
	var code int
	world.Eventually(t, scenarioWaitTimeout, "the receiver answers a delivery after the flood", func() (bool, error) {
		var err error
		code, err = c.postToReceiver(t, "{}", nil)
		return err == nil, err
	})
	require.Equal(t, http.StatusUnauthorized, code, "an unsigned delivery after the flood is refused")
}
