// csi-call: one CSI call per run against a CSI socket, as the kubelet and the external
// provisioner, resizer and snapshotter sidecars would make it; prints the response as JSON.
// The drivers tier uses it in a QEMU guest to drive TopoLVM with real I/O between the calls.
//
//	csi-call -endpoint unix:///path.sock <call> [flags]
//	calls: probe, controller-caps, node-caps, create, delete, stage, unstage, publish, unpublish,
//	       controller-expand, node-expand, snapshot, delete-snapshot
//
// -secrets FILE: key=value lines sent as the call's secrets (create, delete, stage, publish,
// controller-expand, node-expand), as the sidecars and the kubelet send a StorageClass's Secrets;
// from a file, never from argv.
//
// -mount-flag OPT (repeatable) and -access-mode MODE shape the volume capability of create,
// stage, publish and the expansions as the provisioner (a StorageClass's mountOptions) and the
// kubelet (a PV's mountOptions, the claim's access mode) send it; MODE is the CSI name, e.g.
// MULTI_NODE_MULTI_WRITER for ReadWriteMany (default SINGLE_NODE_WRITER).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

type params map[string]string

func (p params) String() string { return fmt.Sprint(map[string]string(p)) }
func (p params) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("%q is not key=value", kv)
	}
	p[k] = v
	return nil
}

type flags []string

func (f *flags) String() string     { return strings.Join(*f, ",") }
func (f *flags) Set(v string) error { *f = append(*f, v); return nil }

type args struct {
	volume, name, snapshot, staging, target, fsType string
	size                                            int64
	parameters, context, secrets                    params
	mountFlags                                      flags
	accessMode                                      csi.VolumeCapability_AccessMode_Mode
}

// readSecrets: a file of key=value lines (blank lines ignored); a line without "=" is refused.
func readSecrets(file string) (params, error) {
	p := params{}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: line %d is not key=value", file, n)
		}
		p[k] = v
	}
	return p, sc.Err()
}

// A mounted volume of the given filesystem, mount flags and access mode: what a PVC with
// volumeMode Filesystem asks for (ReadWriteOnce: SINGLE_NODE_WRITER, the default).
func capability(a args) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: a.fsType, MountFlags: a.mountFlags}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: a.accessMode},
	}
}

func call(ctx context.Context, conn *grpc.ClientConn, name string, a args) (proto.Message, error) {
	controller := csi.NewControllerClient(conn)
	node := csi.NewNodeClient(conn)
	switch name {
	case "probe":
		// a plugin's readiness, as the livenessprobe sidecar and csi-sanity ask it
		return csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{})
	case "controller-caps":
		return controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	case "node-caps":
		return node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	case "create":
		req := &csi.CreateVolumeRequest{
			Name:               a.name,
			CapacityRange:      &csi.CapacityRange{RequiredBytes: a.size},
			VolumeCapabilities: []*csi.VolumeCapability{capability(a)},
			Parameters:         a.parameters,
			Secrets:            a.secrets,
		}
		if a.snapshot != "" {
			req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: a.snapshot}}}
		}
		return controller.CreateVolume(ctx, req)
	case "delete":
		return controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: a.volume, Secrets: a.secrets})
	case "stage":
		return node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: a.volume, StagingTargetPath: a.staging, VolumeCapability: capability(a), VolumeContext: a.context, Secrets: a.secrets})
	case "unstage":
		return node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: a.volume, StagingTargetPath: a.staging})
	case "publish":
		return node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: a.volume, StagingTargetPath: a.staging, TargetPath: a.target, VolumeCapability: capability(a), VolumeContext: a.context, Secrets: a.secrets})
	case "unpublish":
		return node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: a.volume, TargetPath: a.target})
	case "controller-expand":
		return controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: a.volume, CapacityRange: &csi.CapacityRange{RequiredBytes: a.size}, VolumeCapability: capability(a), Secrets: a.secrets})
	case "node-expand":
		return node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: a.volume, VolumePath: a.target, StagingTargetPath: a.staging, CapacityRange: &csi.CapacityRange{RequiredBytes: a.size}, VolumeCapability: capability(a), Secrets: a.secrets})
	case "snapshot":
		return controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: a.volume, Name: a.name, Parameters: a.parameters})
	case "delete-snapshot":
		return controller.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: a.snapshot})
	}
	return nil, fmt.Errorf("unknown call %q", name)
}

func main() {
	endpoint := flag.String("endpoint", "", "CSI endpoint, unix:///path")
	timeout := flag.Duration("timeout", 5*time.Minute, "deadline of the call")
	a := args{parameters: params{}, context: params{}}
	flag.StringVar(&a.volume, "volume", "", "volume ID")
	flag.StringVar(&a.name, "name", "", "name of a new volume or snapshot")
	flag.StringVar(&a.snapshot, "snapshot", "", "snapshot ID (source of a new volume, or the one to delete)")
	flag.StringVar(&a.staging, "staging", "", "staging target path")
	flag.StringVar(&a.target, "target", "", "target path")
	flag.StringVar(&a.fsType, "fs", "xfs", "filesystem type")
	flag.Int64Var(&a.size, "size", 0, "required bytes")
	flag.Var(a.parameters, "param", "key=value parameter of create or snapshot (repeatable)")
	flag.Var(a.context, "context", "key=value volume context for stage and publish (repeatable)")
	secretsFile := flag.String("secrets", "", "file of key=value lines sent as the call's secrets")
	flag.Var(&a.mountFlags, "mount-flag", "mount option of the volume capability (repeatable)")
	accessMode := flag.String("access-mode", "SINGLE_NODE_WRITER", "access mode of the volume capability, by its CSI name")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: csi-call -endpoint unix:///path.sock [flags] <call>")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *endpoint == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	mode, ok := csi.VolumeCapability_AccessMode_Mode_value[*accessMode]
	if !ok || mode == 0 {
		fmt.Fprintf(os.Stderr, "csi-call: -access-mode %q is no CSI access mode\n", *accessMode)
		os.Exit(2)
	}
	a.accessMode = csi.VolumeCapability_AccessMode_Mode(mode)
	if *secretsFile != "" {
		s, err := readSecrets(*secretsFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "csi-call: %v\n", err)
			os.Exit(2)
		}
		a.secrets = s
	}
	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "csi-call: %s: %v\n", *endpoint, err)
		os.Exit(1)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	resp, err := call(ctx, conn, flag.Arg(0), a)
	if err != nil {
		fmt.Fprintf(os.Stderr, "csi-call %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	out, err := protojson.MarshalOptions{EmitUnpopulated: false}.Marshal(resp)
	if err != nil {
		fmt.Fprintf(os.Stderr, "csi-call: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
