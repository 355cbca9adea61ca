package prgroup

import (
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/stretchr/testify/require"
)

func TestGroupOfAndBranch(t *testing.T) {
	for in, want := range map[string]string{
		"my-feature@change-1": "my-feature", "my-feature": "my-feature", "a@b@c": "a",
		"feature/x@nudgeflow-bundle": "feature/x", "@odd": "",
	} {
		require.Equal(t, want, GroupOf(in), in)
	}
	require.Equal(t, "my-feature@nudgeflow-bundle", branch("my-feature", "bundle"))
	require.Equal(t, "my-feature", GroupOf(branch("my-feature", "bundle")), "a target PR's builds stay in the group")
	require.Equal(t, "org/repo#7", OriginKey("https://GitHub.com/Org/Repo.git", 7))
	require.Equal(t, "org/repo#7", OriginKey("Org/Repo", 7))
}

func build(component, repo string, n int, digest string, at int) PRBuild {
	return PRBuild{Component: component, Origin: OriginRef{RepoURL: "https://h/org/" + repo, Number: n}, Build: imagebuild.Build{Image: "quay.io/org/" + component, Digest: digest, BuildUID: digest, BuiltAt: time.Unix(int64(at), 0)}}
}

func TestPlan(t *testing.T) {
	s := &State{}
	require.True(t, s.addBuild(build("a", "a", 1, "d1", 10)))
	require.False(t, s.addBuild(build("a", "a", 1, "d1", 10)), "a resent build changes nothing")
	require.False(t, s.addBuild(build("a", "a", 1, "d0", 5)), "an older build changes nothing")
	require.True(t, s.addBuild(build("b", "b", 1, "e1", 11)))
	p := s.plan()
	require.True(t, p.Draft, "origins unknown count as open")
	require.Len(t, p.applied(), 2)

	s.Origins[0].State, s.Origins[1].State = originMerged, originOpen
	p = s.plan()
	require.True(t, p.Draft)
	require.Len(t, p.WaitingPush, 1)

	s.Origins[1].State = originClosed
	p = s.plan()
	require.True(t, p.Draft, "a's push build is missing")
	require.False(t, p.Close)
	require.True(t, p.Rows[1].Dropped, "b's origin closed unmerged")

	require.True(t, s.addPush(Entry{Component: "a", Origin: s.Origins[0].Key(), From: fromPush, Build: imagebuild.Build{Image: "quay.io/org/a", Digest: "p1", BuildUID: "p1"}}))
	p = s.plan()
	require.False(t, p.Draft)
	require.Equal(t, "p1", p.Rows[0].Digest)
	require.Len(t, p.applied(), 1)

	s.Origins[0].State = originClosed
	require.True(t, s.plan().Close)
}
