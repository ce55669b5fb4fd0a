// Command codeward-bench is the Go side of bench/bindings/run.py: one
// sandbox over the workspace in os.Args[1], driven by lines on stdin,
// answered on stdout:
//
//	run N   N times Exec("true"): prints the N wall times in ms, one line
//	rss     prints this process's resident memory in bytes
//	quit    closes the sandbox and exits
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	codeward "github.com/codeward/codeward/bindings/go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "codeward-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	sb, err := codeward.SelectSandbox(context.Background(), os.Args[1], codeward.SandboxOptions{})
	if err != nil {
		return err
	}
	defer sb.Close()
	if sb.Backend() != "bwrap" {
		return fmt.Errorf("no native sandbox here: %v", sb)
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		what, arg, _ := strings.Cut(in.Text(), " ")
		switch what {
		case "run":
			n, _ := strconv.Atoi(arg)
			times := make([]string, n)
			for i := range times {
				start := time.Now()
				out, err := sb.Exec(context.Background(), "true", codeward.ExecOptions{})
				if err != nil || out.ExitCode != 0 {
					return fmt.Errorf("true failed: %+v %v", out, err)
				}
				times[i] = strconv.FormatFloat(float64(time.Since(start))/1e6, 'f', 3, 64)
			}
			fmt.Println(strings.Join(times, " "))
		case "rss":
			fmt.Println(rss())
		default:
			return nil
		}
	}
	return in.Err()
}

// rss is this process's resident memory in bytes (VmRSS), 0 if unknown.
func rss() int64 {
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
