// Command gitea is the Gitea server (the API Forgejo shares), built from the Go module
// proxy so that the test world needs no downloaded binaries. It is Gitea's own main
// (code.gitea.io/gitea v1.26.0, main.go), which a wrapper module must repeat because a
// main package cannot be imported.
package main

import (
	"os"
	"runtime"
	"strings"
	"time"

	"code.gitea.io/gitea/cmd"
	"code.gitea.io/gitea/modules/log"
	"code.gitea.io/gitea/modules/setting"

	// register supported doc types
	_ "code.gitea.io/gitea/modules/markup/asciicast"
	_ "code.gitea.io/gitea/modules/markup/console"
	_ "code.gitea.io/gitea/modules/markup/csv"
	_ "code.gitea.io/gitea/modules/markup/markdown"
	_ "code.gitea.io/gitea/modules/markup/orgmode"

	"github.com/urfave/cli/v3"
)

// Set with -ldflags -X by hack/tools.sh.
var (
	Version = "1.26.0"
	Tags    = "sqlite sqlite_unlock_notify"
)

func init() {
	setting.AppVer = Version
	setting.AppBuiltWith = " built with " + runtime.Version() + " : " + strings.ReplaceAll(Tags, " ", ", ")
	setting.AppStartTime = time.Now().UTC()
}

func main() {
	cli.OsExiter = func(code int) {
		log.GetManager().Close()
		os.Exit(code)
	}
	app := cmd.NewMainApp(cmd.AppVersion{Version: Version, Extra: setting.AppBuiltWith})
	_ = cmd.RunMainApp(app, os.Args...)
	log.GetManager().Close()
}
