// Command etcd is the etcd server, built from the Go module proxy so that the
// test control plane needs no downloaded binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
