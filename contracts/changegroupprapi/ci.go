package changegroupprapi

// Reading a pull request's CI and commenting on it.

// CIRequest asks what CI reported on one commit of the PR (after the release:
// the head nudgeflow pushed without the skip marker).
type CIRequest struct {
	Repo  Repo  `json:"repo"`
	Known PRRef `json:"known"`
	// SHA is the commit to read; empty reads the PR's head.
	SHA string `json:"sha,omitempty"`
}

// CIObserved is what the forge says about the commit's pipelines.
type CIObserved struct {
	// SHA is the commit read; State the PR's state; Author the login that opened
	// the PR (whom Pipelines as Code's ACL checks).
	SHA    string  `json:"sha"`
	State  PRState `json:"state"`
	Author string  `json:"author,omitempty"`
	// Started: a pipeline (or another CI) reported on the commit; Names are the
	// reports, at most maxCINames.
	Started bool     `json:"started,omitempty"`
	Names   []string `json:"names,omitempty"`
	// AwaitingApproval: Pipelines as Code waits for an `/ok-to-test`; Detail is its
	// text (who is not allowed to trigger CI).
	AwaitingApproval bool   `json:"awaitingApproval,omitempty"`
	Detail           string `json:"detail,omitempty"`
}

// CommentRequest posts one comment on the PR, once: Key names it (lower-case
// letters, digits and dashes), and a comment already holding its marker is never
// posted again, whoever asks and however often.
type CommentRequest struct {
	Repo  Repo   `json:"repo"`
	Known PRRef  `json:"known"`
	Key   string `json:"key"`
	Body  string `json:"body"`
}

// CommentResult says whether this call posted the comment (false: it was there
// already, or the PR is no longer open) and counts the forge writes.
type CommentResult struct {
	Posted bool `json:"posted,omitempty"`
	Writes int  `json:"writes"`
}

// CommentMarker is the hidden line that identifies a comment by its key.
func CommentMarker(key string) string { return "<!-- nudgeflow:" + key + " -->" }
