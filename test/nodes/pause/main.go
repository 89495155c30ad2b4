// Command pause is the nodes tier's pod sandbox program and each namespace node's PID 1: it
// blocks, reaps every child that exits (as PID 1 of a PID namespace it inherits orphans), and
// exits 0 on SIGINT or SIGTERM. Ours because container registries are out of reach here; it does
// what Kubernetes' pause does (build/pause/linux/pause.c), in Go.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (zcloud-storage nodes tier)")
		return
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking: one SIGCHLD can stand for several exits.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
