#!/usr/bin/env bash
# check-layers: the shipped module's one way down (docs/development.md, "Layers").
# Floors, top to bottom; a package imports only packages of its own top folder
# or of a lower floor, never one above it nor a sideways neighbour:
#   cmd/ (wiring) > bridge/, worker/ > workflows/ > activities/ > contracts/ > internal/ > api/
# contracts/ are leaf packages (workflow IDs, signal and start helpers, activity
# names, requests and results): a workflow calls by them, an activity implements
# them or starts a workflow through them; neither imports the other for a name.
# A second rule keeps the forge clients out of the workflows: no package under
# workflows/ or contracts/ may link internal/forge/{github,gitlab,forgejo}
# (go-github, GitLab's and Gitea's SDKs); they name activities through contracts/.
# A third keeps the bridge off the activities: it reaches them only through
# Temporal (signals, starts), so no package under bridge/ imports activities/.
# Tests are not checked (a test may reach up for a fixture).
set -euo pipefail
module=$(go list -m)

floor() {
	case "$1" in
	cmd/*) echo 7 ;;
	bridge | bridge/* | worker | worker/*) echo 6 ;;
	workflows/*) echo 5 ;;
	activities/*) echo 4 ;;
	contracts/*) echo 3 ;;
	internal/*) echo 2 ;;
	api/*) echo 1 ;;
	*) echo 0 ;;
	esac
}

bad=0
while read -r pkg imports; do
	p=${pkg#"$module"/}
	pf=$(floor "$p")
	if [ "$pf" = 0 ]; then
		echo "check-layers: $pkg stands on no floor (add its folder to hack/check-layers.sh and the layout page)" >&2
		bad=1
		continue
	fi
	for imp in $imports; do
		case "$imp" in "$module"/*) ;; *) continue ;; esac
		i=${imp#"$module"/}
		if [ "${p%%/*}" = "${i%%/*}" ]; then continue; fi
		ifl=$(floor "$i")
		case "$p" in bridge | bridge/*) case "$i" in activities/*)
			echo "check-layers: $p imports $i: the bridge reaches activities only through Temporal" >&2
			bad=1
		;; esac ;; esac
		if [ "$ifl" -ge "$pf" ]; then
			echo "check-layers: $p (floor $pf) imports $i (floor $ifl): an import runs up or sideways" >&2
			bad=1
		fi
	done
done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)

clients="^$module/internal/forge/(github|gitlab|forgejo)$"
for pkg in $(go list ./workflows/... ./contracts/...); do
	linked=$(go list -deps "$pkg" | grep -E "$clients" || true)
	if [ -n "$linked" ]; then
		echo "check-layers: ${pkg#"$module"/} links a forge client ($(echo $linked | sed "s|$module/||g")): name the activities through contracts/" >&2
		bad=1
	fi
done
exit $bad
