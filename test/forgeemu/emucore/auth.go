package emucore

import "sync"

// Tokens maps API tokens to the forge's user type. Reading the token from a
// request is the forge's (GitHub's Authorization: token/Bearer, GitLab's
// PRIVATE-TOKEN); so is the answer to an unknown one.
type Tokens[U any] struct {
	mu     sync.Mutex
	tokens map[string]U
}

// NewTokens has no tokens yet.
func NewTokens[U any]() *Tokens[U] { return &Tokens[U]{tokens: map[string]U{}} }

// Add lets token authenticate as u (replacing what it was).
func (t *Tokens[U]) Add(token string, u U) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tokens[token] = u
}

// Revoke forgets token: a rotated credential.
func (t *Tokens[U]) Revoke(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.tokens, token)
}

// Lookup is the user token authenticates as; false for an unknown token.
func (t *Tokens[U]) Lookup(token string) (U, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	u, ok := t.tokens[token]
	return u, ok
}

// Find is a user some token authenticates as for which match is true (any one of
// them when several tokens hold such users); false when none does.
func (t *Tokens[U]) Find(match func(U) bool) (U, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, u := range t.tokens {
		if match(u) {
			return u, true
		}
	}
	var zero U
	return zero, false
}
