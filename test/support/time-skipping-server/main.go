// A Temporal server for the tests that wait for hours or days: the Temporal server's own time
// skipping (server v1.32, enabled here by dynamic config) fast-forwards a workflow's timers
// whenever it has no work in flight, so a multi-day workflow runs in seconds.
//
// The SDKs' Java-based time-skipping test server is downloaded at run time from a host this
// project's machines cannot reach; this one is built from the Go module proxy like the Temporal
// CLI. It prints one JSON line, {"address": ..., "namespace": ...}, then serves until SIGTERM.
package main

import (
	"encoding/json"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"
)

func main() {
	settings := dynamicconfig.StaticClient{
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
		dynamicconfig.WorkflowTimeSkippingEnabled.Key():             []dynamicconfig.ConstrainedValue{{Value: true}},
	}
	server := temporaltest.NewServer(temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(settings)))
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"address": server.GetFrontendHostPort(), "namespace": server.GetDefaultNamespace()})

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	server.Stop()
}
