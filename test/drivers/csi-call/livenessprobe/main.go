// livenessprobe: a stand-in for kubernetes-csi's livenessprobe sidecar, which the Go module proxy
// here does not serve. The nodes tier puts it in the TopoLVM image it builds, so the kubelet's
// liveness probes of the CSI plugins (httpGet /healthz on the sidecar's port) get an answer.
// It does what upstream's does on each request: a CSI Probe call over the plugin's socket, within
// the probe timeout; 200 "ok" when the plugin answers ready, 500 with the reason otherwise.
// Unlike upstream it dials the socket per request (no connection kept) and serves no metrics.
//
//	livenessprobe --csi-address=/path.sock [--http-endpoint=:9808] [--probe-timeout=1s]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// probe asks the plugin at address whether it is ready; nil when it is.
func probe(ctx context.Context, address string) error {
	conn, err := grpc.NewClient("unix://"+address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{})
	if err != nil {
		return err
	}
	// an unset ready means ready (CSI spec)
	if r := resp.GetReady(); r != nil && !r.GetValue() {
		return fmt.Errorf("driver responded but is not ready")
	}
	return nil
}

func main() {
	address := flag.String("csi-address", "/run/csi/socket", "the CSI plugin's socket")
	endpoint := flag.String("http-endpoint", ":9808", "address the /healthz handler listens on")
	timeout := flag.Duration("probe-timeout", time.Second, "deadline of each Probe call")
	flag.Parse()
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), *timeout)
		defer cancel()
		if err := probe(ctx, *address); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintln(w, err)
			log.Printf("health check failed: %v", err)
			return
		}
		fmt.Fprint(w, "ok")
	})
	log.Printf("serving /healthz on %s for %s", *endpoint, *address)
	log.Fatal(http.ListenAndServe(*endpoint, nil))
}
