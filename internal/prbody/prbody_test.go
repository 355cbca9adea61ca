package prbody

import (
	"strings"
	"testing"
	"time"
)

func adrInput() Input {
	at := func(h, m int) time.Time {
		return time.Date(2025, 1, 15, h, m, 0, 0, time.FixedZone("CET", 3600))
	}
	return Input{
		ChangeGroup:    "bundle-x-update-123",
		ChangeGroupURL: "https://konflux.example/ns/my-tenant/changegroups/bundle-x-update-123",
		Hold:           true,
		Rows: []Row{
			{Name: "operator-image", Current: "sha256:abc123" + strings.Repeat("0", 58), New: "sha256:xyz789", State: StateReady, UpdatedAt: at(10, 30)},
			{Name: "operand-a", Current: "sha256:def456", New: "sha256:uvw012", State: StateReady, UpdatedAt: at(10, 32)},
			{Name: "operand-b", Current: "sha256:ghi789", State: stateWaiting},
			{Name: "operand-c", Current: "sha256:jkl000", State: StateDropped},
		},
	}
}

func TestRenderHold(t *testing.T) {
	got := Render(adrInput())
	for _, want := range []string{
		Begin + "\n## Orchestrated Component Update\n",
		"This PR is managed by ChangeGroup `bundle-x-update-123`.",
		"| Image | Current | New | State | Last Updated |",
		"| operator-image | sha256:abc123000000 | sha256:xyz789 | ✅ Ready | 09:30:00 UTC |",
		"| operand-b | sha256:ghi789 |  | ⏳ Waiting |  |",
		"| operand-c | sha256:jkl000 |  | ➖ Dropped |  |",
		"\n[skip ci]\n",
		"This PR will remain in draft until all components are ready",
		"[View ChangeGroup](https://konflux.example/ns/my-tenant/changegroups/bundle-x-update-123)",
		"- [ ] " + RebaseLabel + "\n",
		"- [ ] " + releaseLabel + "\n",
		`<!-- nudgeflow:state {"v":1,"changeGroup":"bundle-x-update-123","mode":"Hold","rows":[{"name":"operator-image"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendering lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, End) {
		t.Errorf("rendering does not end with the end marker")
	}
	if Render(adrInput()) != got {
		t.Error("re-rendering differs")
	}
}

func TestRenderRelease(t *testing.T) {
	in := adrInput()
	in.Hold = false
	got := Render(in)
	if strings.Contains(got, "[skip ci]") || Parse(got).SkipMarker {
		t.Errorf("release rendering holds the marker:\n%s", got)
	}
	if p := Parse(got); p.State == nil || p.State.Mode != "Release" {
		t.Errorf("state = %+v", p.State)
	}
}

func TestParse(t *testing.T) {
	base := Render(adrInput())
	ticked := strings.Replace(base, "- [ ] rebase", "- [x] rebase", 1)
	released := strings.Replace(base, "- [ ] release now", "* [X] release now", 1)
	cases := []struct {
		name                 string
		body                 string
		managed, human       bool
		rebase, release, skp bool
	}{
		{"own rendering", base, true, false, false, false, true},
		{"crlf", strings.ReplaceAll(base, "\n", "\r\n"), true, false, false, false, true},
		{"rebase ticked", ticked, true, false, true, false, true},
		{"release ticked", released, true, false, false, true, true},
		// Text outside the section (a person's note, a bot's appended report) is kept
		// and is not an edit: it must not pause the group.
		{"text before", "Please look at this\n\n" + base, true, false, false, false, true},
		{"text after", base + "\n\nthanks", true, false, false, false, true},
		{"bot report after", base + "\n\n<!-- coverage-bot -->\nCoverage: 81%", true, false, false, false, true},
		{"table edited", strings.Replace(base, "operand-a", "operand-z", 1), true, true, false, false, true},
		{"explanation edited", strings.Replace(base, "This PR will remain in draft", "This PR stays in draft", 1), true, true, false, false, true},
		{"whitespace around", "\n  \n" + base + "\n\n", true, false, false, false, true},
		{"marker removed", strings.Replace(base, "\n[skip ci]\n", "\n", 1), true, false, false, false, false},
		{"wiped", "my own description", false, true, false, false, false},
		{"empty", "", false, true, false, false, false},
		{"end before begin", End + Begin, false, true, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Parse(c.body)
			if p.Managed != c.managed || p.HumanEdited != c.human || p.Rebase != c.rebase || p.ReleaseNow != c.release || p.SkipMarker != c.skp {
				t.Errorf("Parse = %+v", p)
			}
		})
	}
	p := Parse(base)
	if p.State == nil || p.State.ChangeGroup != "bundle-x-update-123" || len(p.State.Rows) != 4 || p.State.Rows[1].New != "sha256:uvw012" {
		t.Errorf("state = %+v", p.State)
	}
}

func TestComposeKeepsTextAroundTheSection(t *testing.T) {
	old := Render(adrInput())
	current := "Notes from a person\n\n" + old + "\n\n<!-- cla-bot -->\nCLA signed"
	in := adrInput()
	in.Hold = false
	fresh := Render(in)
	got := Compose(current, fresh)
	if got != "Notes from a person\n\n"+fresh+"\n\n<!-- cla-bot -->\nCLA signed" {
		t.Fatalf("Compose = %q", got)
	}
	if p := Parse(got); p.HumanEdited || p.State.Mode != "Release" {
		t.Fatalf("a composed description is nudgeflow's own: %+v", p)
	}
	if Compose("wiped by a person", fresh) != fresh {
		t.Fatal("a description without a section is replaced")
	}
}

func TestRenderEscapesUntrustedText(t *testing.T) {
	in := Input{
		ChangeGroup:    "a`b",
		ChangeGroupURL: "https://x/(y) [skip ci]\n- [x] " + RebaseLabel,
		Rows:           []Row{{Name: "x | y\n- [x] " + RebaseLabel + " [skip ci] <!-- nudgeflow:end -->", State: "Weird|State"}},
	}
	got := Render(in)
	p := Parse(got)
	if p.SkipMarker || p.Rebase || p.HumanEdited || !p.Managed || p.State == nil || p.State.Rows[0].Name != in.Rows[0].Name {
		t.Errorf("untrusted text leaked: %+v\n%s", p, got)
	}
	if strings.Count(got, "\n| ") != 2 {
		t.Errorf("table rows broken:\n%s", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Render(adrInput()))
	f.Add("x" + Begin + "<!-- nudgeflow:state {\"v\":1} -->" + End)
	f.Fuzz(func(t *testing.T, body string) {
		p := Parse(body)
		if p.Managed && !strings.Contains(body, Begin) {
			t.Fatal("managed without a begin marker")
		}
	})
}

func FuzzRenderRoundTrip(f *testing.F) {
	f.Add("cg", "https://x", "operand-a", "sha256:1", "sha256:2", "Ready", true, false, true)
	f.Fuzz(func(t *testing.T, cg, url, name, cur, nw, state string, hold, rebase, release bool) {
		in := Input{ChangeGroup: cg, ChangeGroupURL: url, Hold: hold, Rebase: rebase, ReleaseNow: release,
			Rows: []Row{{Name: name, Current: cur, New: nw, State: state, UpdatedAt: time.Unix(1700000000, 0)}}}
		body := Render(in)
		if Render(in) != body {
			t.Fatal("rendering not deterministic")
		}
		p := Parse(body)
		if !p.Managed || p.HumanEdited || p.Rebase != rebase || p.ReleaseNow != release || p.SkipMarker != hold {
			t.Fatalf("round trip: %+v\n%s", p, body)
		}
		valid := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") } // JSON's own replacement
		if p.State == nil || p.State.ChangeGroup != valid(cg) || p.State.Rows[0].New != valid(nw) {
			t.Fatalf("state lost: %+v\n%s", p.State, body)
		}
	})
}
