package remote_test

import (
	"context"
	"fmt"
	"log"

	"github.com/acpterm/acpterm/remote"
)

// Install puts this acpterm in the container (or finds the copy an
// earlier run left there) before Command starts its exec server.
func ExampleInstall() {
	ctx := context.Background()
	t, err := remote.ParseTarget("podman://devbox/src/app")
	if err != nil {
		log.Fatal(err)
	}
	opts := &remote.CommandOptions{ServerArgs: []string{"--sandbox", "workspace-write"}}
	in, err := remote.Install(ctx, t, opts, nil) // errors.Is(err, remote.ErrPlatform): no build for it here
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(in)          // "copied /usr/local/bin/acpterm (8.8 MB) to podman://devbox/src/app as /tmp/acpterm-0/…/acpterm in 1.3s"
	opts = in.Options(*opts) // the copy, checked there by its SHA-256 before it runs
	cmd, err := remote.Command(t, opts)
	if err != nil {
		log.Fatal(err)
	}
	conn, err := remote.Dial(cmd)
	if err != nil {
		log.Fatal(err)
	}
	c, err := remote.NewClient(ctx, conn, nil)
	if err != nil {
		log.Fatalf("%v: %s", err, conn.Stderr())
	}
	defer c.Close()
}
