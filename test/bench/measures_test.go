package bench

import "testing"

func TestLoggedSettingReadsJSONAndTextLogs(t *testing.T) {
	for _, tc := range []struct{ name, log, want string }{
		{"json", `{"time":"t","level":"INFO","msg":"worker tuning","stickyCacheSize":2000,"maxConcurrentActivities":100}`, "2000"},
		{"json string", `{"msg":"worker tuning","stickyCacheSize":"2000"}`, "2000"},
		{"text", `time=t level=INFO msg="worker tuning" stickyCacheSize=2000 maxConcurrentActivities=100`, "2000"},
		{"absent", `{"msg":"started"}`, "?"},
	} {
		if got := loggedSetting([]byte(tc.log), "stickyCacheSize"); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
