// varlink-go-client: a third-party Varlink client of infervisord, built with
// varlink-go (Debian: golang-github-varlink-go-dev) and the bindings its
// varlink-go-interface-generator makes from io.infervisor.supervisor.varlink.
//
//	varlink-go-client SOCKET
//
// Reads the interface description the daemon serves and parses it with
// varlink-go's own IDL parser, then calls List and prints one line per
// worker: "NAME STATE". Exits 1 on any error.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/varlink/go/varlink"
	"github.com/varlink/go/varlink/idl"

	supervisor "ioinfervisorsupervisor"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: varlink-go-client SOCKET")
		os.Exit(2)
	}
	ctx := context.Background()
	conn, err := varlink.NewConnection(ctx, "unix:"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	defer conn.Close()

	description, err := conn.GetInterfaceDescription(ctx, "io.infervisor.supervisor")
	if err != nil {
		fmt.Fprintln(os.Stderr, "GetInterfaceDescription:", err)
		os.Exit(1)
	}
	parsed, err := idl.New(description)
	if err != nil {
		fmt.Fprintln(os.Stderr, "the served description does not parse:", err)
		os.Exit(1)
	}
	fmt.Println("interface", parsed.Name)

	workers, err := supervisor.List().Call(ctx, conn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "List:", err)
		os.Exit(1)
	}
	for _, w := range workers {
		fmt.Println(w.Name, w.State)
	}
}
