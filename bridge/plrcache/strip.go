package plrcache

import (
	"strings"
	"sync"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// stripPipelineRun is the cache transform of PipelineRuns. It keeps what the
// bridge's readers read, and nothing else (at 100,000 PipelineRuns every byte
// kept per run is 75 KB of heap, every 100 bytes 7.5 MB):
//   - of the metadata, the name, namespace, UID, resource version, generation,
//     creation and deletion timestamps, finalizers, and the labels and annotations
//     some reader reads (readKey) — not managedFields, generateName or owner
//     references (no reader of the bridge reads them, and no controller of the
//     bridge is enqueued by a PipelineRun's owner);
//   - of the spec, spec.status alone (held nudges, the Renovate branch queue); a
//     nudge's spec embeds its whole pipeline;
//   - of the status, the Succeeded condition (its message only on nudge runs, whose
//     outcome carries it to the Nudge workflow; a build's is Tekton's task count,
//     which no reader reads), the results the bridge reads (readResults), start and
//     completion times — not the resolved pipeline (status.pipelineSpec, tens of KB
//     for a Konflux build), child references, skipped tasks, provenance, span
//     context, other conditions or results.
//
// Keys, and the short values many runs share (namespaces, label values, condition
// types, statuses and reasons, Tekton's messages, result names), are interned:
// 75,000 builds repeat the same few dozen of them.
func stripPipelineRun(in any) (any, error) {
	plr, ok := in.(*tektonv1.PipelineRun)
	if !ok {
		return in, nil // a tombstone: client-go hands it on untransformed
	}
	nudge := konflux.IsNudgeRun(plr.Labels)
	plr.ManagedFields = nil
	plr.GenerateName = ""
	plr.OwnerReferences = nil
	plr.Namespace = internedValues.intern(plr.Namespace)
	for i, f := range plr.Finalizers {
		plr.Finalizers[i] = internedKeys.intern(f)
	}
	plr.Labels = readKeys(plr.Labels)
	plr.Annotations = readKeys(plr.Annotations)
	plr.Spec = tektonv1.PipelineRunSpec{Status: plr.Spec.Status}
	plr.Status = tektonv1.PipelineRunStatus{
		Status: duckv1.Status{Conditions: succeededOnly(plr.Status.Conditions, nudge)},
		PipelineRunStatusFields: tektonv1.PipelineRunStatusFields{
			StartTime:      plr.Status.StartTime,
			CompletionTime: plr.Status.CompletionTime,
			Results:        readResults(plr.Status.Results),
		},
	}
	return plr, nil
}

// succeededOnly is the Succeeded condition of conds (IsDone, renovaterun.StatusOf, the
// backlog's completion time), its message dropped unless keepMessage.
func succeededOnly(conds duckv1.Conditions, keepMessage bool) duckv1.Conditions {
	for _, c := range conds {
		if c.Type != apis.ConditionSucceeded {
			continue
		}
		c.Type = apis.ConditionSucceeded
		c.Status = corev1.ConditionStatus(internedValues.intern(string(c.Status)))
		c.Severity = ""
		c.Reason = internedValues.intern(c.Reason)
		if !keepMessage {
			c.Message = ""
		} else if len(c.Message) <= maxInternedMessage {
			c.Message = internedValues.intern(c.Message)
		}
		return duckv1.Conditions{c}
	}
	return nil
}

// readResultNames are the results the bridge reads: a build's image
// (konflux.BuildResults) and a Renovate run's outcome (renovaterun.StatusOf).
var readResultNames = map[string]bool{
	konflux.ResultImageURL:    true,
	konflux.ResultImageDigest: true,
	renovaterun.ResultOutcome: true,
}

func readResults(results []tektonv1.PipelineRunResult) []tektonv1.PipelineRunResult {
	var kept []tektonv1.PipelineRunResult
	for _, r := range results {
		if !readResultNames[r.Name] {
			continue
		}
		if kept == nil {
			kept = make([]tektonv1.PipelineRunResult, 0, len(readResultNames))
		}
		r.Name = internedKeys.intern(r.Name)
		r.Value.Type = tektonv1.ParamType(internedKeys.intern(string(r.Value.Type)))
		kept = append(kept, r)
	}
	return kept
}

// readKeysOfOthers are the labels and annotations of other services some reader of
// the bridge reads on a build or nudge run; every key of nudgeflow's own
// (ownKeyPrefix) is kept as well. A reader of a new key adds it here:
// TestStripPipelineRunKeepsWhatTheBridgeReads lists the keys each reader reads.
var readKeysOfOthers = withForms(map[string]bool{
	renovaterun.LabelManagedBy:  true, // nudgeflow's Renovate runs (isOurRenovateRun, the branch queue)
	renovaterun.LabelKueueQueue: true, // the branch queue leaves Kueue's runs alone
	// Pipelines as Code: the event (IsPushBuild), a PR build's group (prgroups)
	konflux.AnnotationEventType:    true,
	konflux.AnnotationSourceBranch: true,
	konflux.AnnotationPullRequest:  true,
	konflux.AnnotationPaCRepoURL:   true,
	konflux.AnnotationPaCSHA:       true,
},
	// Konflux's keys, in both forms (ADR 69). Which run: the cache's selectors,
	// builds.BuildReconciler, prgroups.
	konflux.PipelineTypeKey, konflux.NudgeTypeKey, konflux.ComponentKey,
	// build-service: a build's repository and nudge files, a PR build's number and
	// commit, a nudge run's source and targets.
	konflux.RepoKey, konflux.NudgeFilesKey, konflux.PRNumberKey, konflux.CommitSHAKey,
	konflux.NudgedKey, konflux.NudgingKey, konflux.NudgingImageKey, konflux.NudgingPipelineKey, konflux.NudgingCommitKey,
	// integration-service's acknowledgement of a push build (build routing).
	konflux.ISNudgeProcessedKey,
)

// withForms is m with both forms of each key.
func withForms(m map[string]bool, keys ...konflux.Key) map[string]bool {
	for _, k := range keys {
		for _, f := range k.Forms() {
			m[f] = true
		}
	}
	return m
}

// ownKeyPrefix: nudgeflow's own labels and annotations (held-by, workflow id,
// branch, nudge-routed, ...), all read by the bridge or the worker's activities
// it calls.
const ownKeyPrefix = "nudgeflow.konflux-ci.dev/"

func readKey(k string) bool {
	return readKeysOfOthers[k] || strings.HasPrefix(k, ownKeyPrefix)
}

// readKeys is m with the keys some reader reads, keys and short values interned.
func readKeys(m map[string]string) map[string]string {
	n := 0
	for k := range m {
		if readKey(k) {
			n++
		}
	}
	if m == nil {
		return nil
	}
	if n == 0 {
		// Not nil: a reader that sets a key on a run that had some (the server's
		// object has a map) must not meet a nil map.
		return map[string]string{}
	}
	// Sized to what is kept: a map made for the 20 keys PaC and Tekton put on a
	// run takes a table of 32 slots, over 1 KB, for the 5 kept.
	out := make(map[string]string, n)
	for k, v := range m {
		if readKey(k) {
			if len(v) <= maxInternedValue {
				v = internedValues.intern(v)
			}
			out[internedKeys.intern(k)] = v
		}
	}
	return out
}

// internedKeys and internedValues hold one copy of each label and annotation key
// and short value of the cached runs: a cluster's runs share a few hundred keys
// and values (event and pipeline types, branch, application and component names).
// Each table stops growing at maxInterned strings (then new strings are kept as
// they are): values unique to a run (timestamps, numbers) fill the values' table,
// never the keys'.
var internedKeys, internedValues = &internTable{m: map[string]string{}}, &internTable{m: map[string]string{}}

const (
	maxInterned      = 20000
	maxInternedValue = 48
	// maxInternedMessage: Tekton's messages ("Tasks Completed: 19 (Failed: 0,
	// Cancelled 0), Skipped: 2") repeat across runs.
	maxInternedMessage = 96
)

type internTable struct {
	sync.RWMutex
	m map[string]string
}

func (t *internTable) intern(s string) string {
	t.RLock()
	c, ok := t.m[s]
	t.RUnlock()
	if ok {
		return c
	}
	t.Lock()
	defer t.Unlock()
	if c, ok := t.m[s]; ok {
		return c
	}
	if len(t.m) >= maxInterned {
		return s
	}
	t.m[s] = s
	return s
}
