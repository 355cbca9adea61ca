package changegroup

import "go.temporal.io/sdk/converter"

func converterFor() converter.DataConverter { return converter.GetDefaultDataConverter() }
