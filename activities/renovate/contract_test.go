package renovate

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
)

// The Nudge workflow calls the activities by renovateapi's names; the worker
// registers Activities whole, under its methods' names: they must be the same.
func TestContractNamesTheRegisteredMethods(t *testing.T) {
	methods := reflect.TypeOf(&Activities{})
	for _, name := range []string{renovateapi.LaunchActivity, renovateapi.StatusActivity, renovateapi.DeliveryActivity, renovateapi.OutcomeActivity} {
		_, ok := methods.MethodByName(name)
		require.True(t, ok, "renovate.Activities has no method %s", name)
	}
}
