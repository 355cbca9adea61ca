package nudgewrite

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

func TestContractErrors(t *testing.T) {
	for _, c := range []struct {
		in        error
		typ       string
		retryable bool
	}{
		{temporal.NewNonRetryableApplicationError("not owned", ownership.ErrorType, nil), nudgewriteapi.ErrorTypeRefused, false},
		{temporal.NewNonRetryableApplicationError("404", "Forgejo404", nil), nudgewriteapi.ErrorTypeRefused, false},
		{temporal.NewNonRetryableApplicationError("no creds", nudgewriteapi.ErrorTypeNoCredentials, nil), nudgewriteapi.ErrorTypeNoCredentials, false},
		{temporal.NewNonRetryableApplicationError("gone", nudgewriteapi.ErrorTypeTargetMissing, nil), nudgewriteapi.ErrorTypeTargetMissing, false},
		{temporal.NewNonRetryableApplicationError("bad url", "InvalidRepository", nil), nudgewriteapi.ErrorTypeNotNudgeable, false},
		{temporal.NewNonRetryableApplicationError("no base", "BaseBranchMissing", nil), nudgewriteapi.ErrorTypeNotNudgeable, false},
		{temporal.NewApplicationErrorWithOptions("slow down", "RateLimited", temporal.ApplicationErrorOptions{NextRetryDelay: time.Minute}), "RateLimited", true},
		{temporal.NewApplicationError("502", "Forgejo502"), "Forgejo502", true},
	} {
		var ae *temporal.ApplicationError
		out := contractError(c.in)
		require.True(t, errors.As(out, &ae), "%v", c.in)
		require.Equal(t, c.typ, ae.Type(), "%v", c.in)
		require.Equal(t, !c.retryable, ae.NonRetryable(), "%v", c.in)
		var orig *temporal.ApplicationError
		require.True(t, errors.As(c.in, &orig))
		require.Contains(t, out.Error(), orig.Message(), "the message is kept")
	}
}
