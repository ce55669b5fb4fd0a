//go:build linux && cgo

package codeward_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/codeward/codeward/bindings/go"
)

// A network grant: one command reaches one approved origin (here a server
// on the host's loopback) through the proxy its sandbox gets, and nothing
// else. The grant is approved against the sandbox's policy digest.
func ExampleNetworkGrant() {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the origin\n")
	}))
	defer origin.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(origin.URL, "http://"), ":")

	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "grant-example-")
	defer os.RemoveAll(dir)
	sb, err := codeward.SelectSandbox(ctx, dir, codeward.SandboxOptions{Strict: true})
	if err != nil {
		panic(err)
	}
	defer sb.Close()
	policy, err := sb.Policy() // what the human is shown and approves
	if err != nil {
		panic(err)
	}
	var p int
	fmt.Sscan(port, &p)
	out, err := sb.Exec(ctx, "curl -sS "+origin.URL+"/; curl -sS http://example.com/",
		codeward.ExecOptions{NetworkGrant: &codeward.NetworkGrant{
			Host: host, Port: p, PolicyDigest: policy.Digest,
		}})
	if err != nil {
		panic(err)
	}
	fmt.Print(strings.ReplaceAll(out.Stdout, origin.URL[len("http://"):], "ORIGIN"))
	fmt.Println(out.NetworkGrant.Connections, "connection,", out.NetworkGrant.Refused, "refused")
	// Output:
	// hello from the origin
	// codeward network grant: example.com:80 is not the granted origin; this command may reach ORIGIN
	// 1 connection, 1 refused
}
