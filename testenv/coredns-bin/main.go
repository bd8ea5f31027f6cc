// CoreDNS with only the plugins the test environment's cluster DNS uses: the
// default build links every plugin (cloud DNS providers, etcd, dnstap, …),
// which only makes the cold build slower on a 2-core machine.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

// The order plugins run in, as in CoreDNS's plugin.cfg (a plugin missing from
// this list is refused in a Corefile), except that template comes last: the
// Corefile's catch-all template answers NXDOMAIN for names outside the cluster
// (there is no upstream to forward to), so it must see only what kubernetes
// passed on.
var directives = []string{
	"ready",
	"health",
	"errors",
	"log",
	"cache",
	"kubernetes",
	"template",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
