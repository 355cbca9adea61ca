package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// Seeding the bridge-scale measure's PipelineRuns straight into etcd.
//
// Through the API server, 100,000 runs of 29 KB (a create and a status write
// each) took 32 minutes of both of this machine's cores: the measure is of the
// bridge, not of writing. The API server keeps a custom resource in etcd as its
// JSON at /registry/<group>/<resource>/<namespace>/<name>, without
// metadata.resourceVersion (etcd's revision is the version); written there as the
// API server would write it (uid, creation time, generation, the managedFields of
// the create and of Tekton's status write), it is served by every list and watch
// like any other. This is what restoring a cluster's etcd does. The namespaces
// are created through the API, and the written count is read back through it.

const (
	// etcdKeyPrefix is kube-apiserver's --etcd-prefix default.
	etcdKeyPrefix = "/registry/tekton.dev/pipelineruns/"
	// seedTxnBytes bounds one etcd transaction's JSON (base64 makes each run a
	// third larger). etcd keeps its last 10,000 raft entries in memory: entries of
	// a megabyte (etcd's limit is 1.5 MiB) took it to 13 GB at 100,000 runs.
	seedTxnBytes = 256 << 10
	// seedWriters write transactions at once.
	seedWriters = 4
)

// seedScaleRuns writes runs [0, n) into the etcd at etcdURL and reports each
// written run on progress.
func seedScaleRuns(ctx context.Context, etcdURL string, n int, progress func(int)) error {
	pipelineSpec := scalePipelineSpec()
	type batch struct{ from, to int }
	batches := make(chan batch)
	go func() {
		defer close(batches)
		// A batch of runs whose base64 JSON fits seedTxnBytes: sized from the first run.
		first, err := seededRun(0, pipelineSpec)
		size := 30
		if err == nil {
			size = max(1, seedTxnBytes*3/4/(len(first)+512))
		}
		for from := 0; from < n; from += size {
			select {
			case batches <- batch{from, min(n, from+size)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	client := &http.Client{Timeout: 2 * time.Minute}
	errs := make(chan error, seedWriters)
	for w := 0; w < seedWriters; w++ {
		go func() {
			for b := range batches {
				if err := seedBatch(ctx, client, etcdURL, b.from, b.to, pipelineSpec); err != nil {
					errs <- err
					return
				}
				progress(b.to - b.from)
			}
			errs <- nil
		}()
	}
	var first error
	for w := 0; w < seedWriters; w++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// etcdPut is one put of an etcd v3 JSON transaction.
type etcdPut struct {
	RequestPut struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"requestPut"`
}

// seedBatch writes runs [from, to) in one etcd transaction (all or none: a retry
// writes the same runs again).
func seedBatch(ctx context.Context, client *http.Client, etcdURL string, from, to int, pipelineSpec *tektonv1.PipelineSpec) error {
	puts := make([]etcdPut, 0, to-from)
	for i := from; i < to; i++ {
		value, err := seededRun(i, pipelineSpec)
		if err != nil {
			return err
		}
		var p etcdPut
		p.RequestPut.Key = base64.StdEncoding.EncodeToString([]byte(etcdKeyPrefix + scaleNamespace(i) + "/" + scaleRunName(i)))
		p.RequestPut.Value = base64.StdEncoding.EncodeToString(value)
		puts = append(puts, p)
	}
	body, err := json.Marshal(map[string]any{"success": puts})
	if err != nil {
		return err
	}
	return retryTransient(ctx, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(etcdURL, "/")+"/v3/kv/txn", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("writing PipelineRuns %d to %d into etcd: %w", from, to-1, err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK || bytes.Contains(answer, []byte(`"error"`)) {
			return fmt.Errorf("writing PipelineRuns %d to %d into etcd: %s: %s", from, to-1, resp.Status, answer)
		}
		return nil
	})
}

// scaleRunName is run i's name (the name writeScaleRun gave it through the API).
func scaleRunName(i int) string {
	return fmt.Sprintf("%s%06d", scaleRun(i, nil).GenerateName, i)
}

// seededRun is run i as the API server stores it after Pipelines as Code created
// it and Tekton wrote its final status.
func seededRun(i int, pipelineSpec *tektonv1.PipelineSpec) ([]byte, error) {
	plr := scaleRun(i, pipelineSpec)
	plr.Name, plr.GenerateName = scaleRunName(i), ""
	finishScaleRun(plr, i, pipelineSpec)
	plr.TypeMeta = metav1.TypeMeta{APIVersion: tektonv1.SchemeGroupVersion.String(), Kind: "PipelineRun"}
	plr.UID = uuid.NewUUID()
	plr.Generation = 1
	created := metav1.NewTime(plr.Status.StartTime.Add(-time.Second))
	plr.CreationTimestamp = created
	spec, err := managedFields(map[string]any{"metadata": map[string]any{"labels": plr.Labels, "annotations": plr.Annotations}, "spec": plr.Spec})
	if err != nil {
		return nil, err
	}
	status, err := managedFields(map[string]any{"status": plr.Status})
	if err != nil {
		return nil, err
	}
	plr.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "pipelines-as-code-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "tekton.dev/v1",
			Time: &created, FieldsType: "FieldsV1", FieldsV1: spec},
		{Manager: "tekton-pipelines-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "tekton.dev/v1",
			Time: plr.Status.CompletionTime, FieldsType: "FieldsV1", FieldsV1: status, Subresource: "status"},
	}
	return json.Marshal(plr)
}

// managedFields is the FieldsV1 set of obj's fields: each field of a label or
// annotation map and each top-level field of the spec and status, as the API
// server's field manager records an Update of them.
func managedFields(obj map[string]any) (*metav1.FieldsV1, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, err
	}
	set, err := json.Marshal(fieldSet(generic, 2))
	if err != nil {
		return nil, err
	}
	return &metav1.FieldsV1{Raw: set}, nil
}

// fieldSet is the "f:" set of v's keys, depth levels deep.
func fieldSet(v map[string]any, depth int) map[string]any {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	set := make(map[string]any, len(keys))
	for _, k := range keys {
		child, isMap := v[k].(map[string]any)
		if isMap && depth > 0 {
			set["f:"+k] = fieldSet(child, depth-1)
		} else {
			set["f:"+k] = map[string]any{}
		}
	}
	return set
}
