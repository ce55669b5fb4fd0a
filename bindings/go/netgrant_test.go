//go:build linux && cgo

package codeward

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Network grants for real: a command in the real sandbox (curl, and bash's
// /dev/tcp for raw bytes) reaches a loopback server of the test through the
// mediator, and nothing else. Names resolve through loopNet: a granted name
// leads to a public address that its dialer maps to the loopback server of
// the same port, so the address checks in between are the real ones.

const publicIP = "93.184.215.14"

// loopNet resolves every name in dns (others: publicIP) and dials publicIP
// on the loopback interface instead; it records what was dialed.
type loopNet struct {
	mu     sync.Mutex
	dns    map[string][]string
	dialed []string
}

func (n *loopNet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	answers, ok := n.dns[host]
	if !ok {
		answers = []string{publicIP}
	}
	var out []netip.Addr
	for _, a := range answers {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func (n *loopNet) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	n.mu.Lock()
	n.dialed = append(n.dialed, address)
	n.mu.Unlock()
	host, port, _ := net.SplitHostPort(address)
	if host == publicIP {
		address = net.JoinHostPort("127.0.0.1", port)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

// origin is an HTTP server on the host's loopback that records each request.
type origin struct {
	*httptest.Server
	port int
	mu   sync.Mutex
	seen []string
}

func newOrigin(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *origin {
	t.Helper()
	o := &origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.seen = append(o.seen, r.Method+" "+r.URL.RequestURI()+" "+r.Host)
		o.mu.Unlock()
		if handler != nil {
			handler(w, r)
			return
		}
		io.WriteString(w, "hello through the grant\n")
	}))
	t.Cleanup(o.Close)
	o.port = o.Listener.Addr().(*net.TCPAddr).Port
	return o
}

func (o *origin) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen...)
}

// runGranted runs command with a grant of host:port through loopNet.
func runGranted(t *testing.T, sb Sandbox, host string, port int, command string) CommandOutput {
	t.Helper()
	policy, err := sb.Policy()
	if err != nil {
		t.Fatal(err)
	}
	out, err := sb.Exec(context.Background(), command, ExecOptions{
		Timeout: time.Minute,
		NetworkGrant: &NetworkGrant{Host: host, Port: port, PolicyDigest: policy.Digest,
			Mediator: &NetworkMediator{Resolver: &loopNet{}, Dialer: &loopNet{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.NetworkGrant == nil {
		t.Fatalf("no grant summary: %+v", out)
	}
	return out
}

const curl = "curl -sS --max-time 20"

func bothSandboxes(t *testing.T, run func(t *testing.T, sb Sandbox)) {
	for _, oneShot := range []bool{false, true} {
		name := map[bool]string{false: "long-lived", true: "one-shot"}[oneShot]
		t.Run(name, func(t *testing.T) { run(t, nativeSandbox(t, SandboxOptions{OneShot: oneShot})) })
	}
}

func TestNetworkGrantReachesTheGrantedOriginAndNothingElse(t *testing.T) {
	granted := newOrigin(t, nil)
	other := newOrigin(t, nil)
	bothSandboxes(t, func(t *testing.T, sb Sandbox) {
		before := len(granted.requests())
		p, q := granted.port, other.port
		command := strings.Join([]string{
			fmt.Sprintf("%s http://dl.example.com:%d/hello", curl, p),
			// curl's socks5h:// (ALL_PROXY): the mediator resolves the name
			fmt.Sprintf(`%s -x "$ALL_PROXY" http://dl.example.com:%d/hello`, curl, p),
			fmt.Sprintf("%s -w ' %%{http_code}\\n' http://other.example.com:%d/x", curl, p),
			fmt.Sprintf("%s -w ' %%{http_code}\\n' http://127.0.0.1:%d/x", curl, p),
			fmt.Sprintf("%s -w ' %%{http_code}\\n' http://127.0.0.1:%d/x", curl, q),
			fmt.Sprintf("%s -w ' %%{http_code}\\n' http://dl.example.com:%d/x", curl, q),
			// a direct connection, around the proxy
			fmt.Sprintf("(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo direct || echo no-direct", p),
		}, "; ")
		out := runGranted(t, sb, "dl.example.com", p, command)
		if !out.OK() {
			t.Fatalf("%+v", out)
		}
		if got := strings.Count(out.Stdout, "hello through the grant"); got != 2 {
			t.Errorf("%d answers of the granted origin:\n%s%s", got, out.Stdout, out.Stderr)
		}
		for _, refused := range []string{
			fmt.Sprintf("other.example.com:%d is not the granted origin", p),
			fmt.Sprintf("127.0.0.1:%d is not the granted origin", p), // an IP literal
			fmt.Sprintf("127.0.0.1:%d is not the granted origin", q),
			fmt.Sprintf("dl.example.com:%d is not the granted origin", q),
		} {
			if !strings.Contains(out.Stdout, refused+"; this command may reach dl.example.com:"+
				strconv.Itoa(p)+"\n 403") {
				t.Errorf("not refused with 403: %s\n%s", refused, out.Stdout)
			}
		}
		if !strings.Contains(out.Stdout, "no-direct") {
			t.Errorf("a direct connection: %s", out.Stdout)
		}
		if got := granted.requests()[before:]; len(got) != 2 || got[0] != fmt.Sprintf(
			"GET /hello dl.example.com:%d", p) {
			t.Errorf("the granted origin saw %v", got)
		}
		if got := other.requests(); len(got) != 0 {
			t.Errorf("another origin was reached: %v", got)
		}
		g := out.NetworkGrant
		if !g.Listening || g.Connections != 2 || g.Refused != 4 || len(g.Refusals) != 4 ||
			g.Host != "dl.example.com" || g.Port != p {
			t.Errorf("summary %+v", g)
		}
		// the grant was the command's: the next one has no proxy
		next, err := sb.Exec(context.Background(), fmt.Sprintf(
			"env | grep -ci proxy; %s -x http://127.0.0.1:3128 http://dl.example.com:%d/hello", curl, p),
			ExecOptions{})
		if err != nil || next.OK() || !strings.HasPrefix(next.Stdout, "0\n") || next.NetworkGrant != nil {
			t.Errorf("the next command: %+v, %v", next, err)
		}
	})
}

// rawOrigin records every byte of each connection, answers once, and reads
// on for a while, so bytes forwarded after the answer would be recorded.
type rawOrigin struct {
	l    net.Listener
	port int
	mu   sync.Mutex
	got  []byte
	wg   sync.WaitGroup
}

func newRawOrigin(t *testing.T) *rawOrigin {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &rawOrigin{l: l, port: l.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			o.wg.Add(1)
			go o.serve(c)
		}
	}()
	t.Cleanup(func() { l.Close(); o.wg.Wait() })
	return o
}

func (o *rawOrigin) serve(c net.Conn) {
	defer o.wg.Done()
	defer c.Close()
	var data []byte
	buf := make([]byte, 65536)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for !strings.Contains(string(data), "\r\n\r\n") {
		n, err := c.Read(buf)
		data = append(data, buf[:n]...)
		if err != nil {
			break
		}
	}
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nanswer")
	c.SetReadDeadline(time.Now().Add(time.Second))
	for {
		n, err := c.Read(buf)
		data = append(data, buf[:n]...)
		if err != nil {
			break
		}
	}
	o.mu.Lock()
	o.got = append(o.got, data...)
	o.mu.Unlock()
}

func (o *rawOrigin) bytes() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.got)
}

// rawExchange is bash sending raw bytes (printf's escapes) to the proxy and
// printing the whole answer between markers.
func rawExchange(name, bytes string) string {
	return fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/3128; printf '%s' >&3; echo "<%s>"; cat <&3; `+
		`echo "</%s>"; exec 3<&-; `, bytes, name, name)
}

func answerOf(t *testing.T, out CommandOutput, name string) string {
	t.Helper()
	stdout := out.Stdout
	_, rest, ok := strings.Cut(stdout, "<"+name+">\n")
	answer, _, ok2 := strings.Cut(rest, "</"+name+">")
	if !ok || !ok2 {
		t.Fatalf("no answer for %s in:\n%s\nstderr: %s\nexit %d", name, stdout, out.Stderr, out.ExitCode)
	}
	return answer
}

func TestNetworkGrantRefusesPipelinedMalformedAndRedirected(t *testing.T) {
	raw := newRawOrigin(t)
	elsewhere := newOrigin(t, nil)
	redirecting := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/stolen", elsewhere.port), http.StatusFound)
	})
	sb := nativeSandbox(t, SandboxOptions{})
	first := fmt.Sprintf(`GET http://dl.example.com:%d/first HTTP/1.1\r\nHost: dl.example.com\r\n\r\n`, raw.port)
	second := fmt.Sprintf(`GET http://other.example.com:%d/second HTTP/1.1\r\n\r\n`, raw.port)
	command := rawExchange("pipelined", first+second) +
		rawExchange("sup1", `CONNECT dl.example.com:\xb9 HTTP/1.1\r\n\r\n`) +
		rawExchange("arabic1", `CONNECT dl.example.com:\xd9\xa1 HTTP/1.1\r\n\r\n`) +
		rawExchange("chunked", fmt.Sprintf(`POST http://dl.example.com:%d/ HTTP/1.1\r\n`+
			`Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, raw.port)) +
		rawExchange("folded", fmt.Sprintf(`GET http://dl.example.com:%d/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n`,
			raw.port)) +
		rawExchange("origin-form", `GET /x HTTP/1.1\r\nHost: dl.example.com\r\n\r\n`)
	out := runGranted(t, sb, "dl.example.com", raw.port, command)
	for name, want := range map[string]string{
		"pipelined":   "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nanswer",
		"sup1":        "HTTP/1.1 400 codeward network grant: the target 'dl.example.com:?' has no valid port\r\n",
		"arabic1":     "HTTP/1.1 400 codeward network grant: the target 'dl.example.com:??' has no valid port\r\n",
		"chunked":     "HTTP/1.1 501 codeward network grant: a request body with Transfer-Encoding",
		"folded":      "HTTP/1.1 400 codeward network grant: malformed header line ' folded'\r\n",
		"origin-form": "HTTP/1.1 400 codeward network grant: a request to a proxy names its target",
	} {
		if answer := answerOf(t, out, name); !strings.HasPrefix(answer, want) {
			t.Errorf("%s: answered %q, want %q...", name, answer, want)
		}
	}
	seen := raw.bytes()
	if strings.Count(seen, "GET /first HTTP/1.1\r\n") != 1 || strings.Contains(seen, "second") ||
		strings.Contains(seen, "other.example.com") || strings.Contains(seen, "chunked") {
		t.Errorf("the origin received %q", seen)
	}
	g := out.NetworkGrant
	if g.Connections != 1 || g.Refused != 6 || !strings.Contains(strings.Join(g.Refusals, "\n"),
		"a request pipelined behind the first was dropped, not forwarded") {
		t.Errorf("summary %+v", g)
	}

	// a redirect to another origin: the client's next request is decided again
	out = runGranted(t, sb, "127.0.0.1", redirecting.port, fmt.Sprintf(
		"%s -L -w ' %%{http_code}\\n' http://127.0.0.1:%d/start", curl, redirecting.port))
	if !strings.Contains(out.Stdout, fmt.Sprintf("127.0.0.1:%d is not the granted origin", elsewhere.port)) ||
		!strings.HasSuffix(out.Stdout, " 403\n") {
		t.Errorf("the redirect: %+v", out)
	}
	if got := elsewhere.requests(); len(got) != 0 {
		t.Errorf("the redirect reached another origin: %v", got)
	}
	if got := redirecting.requests(); len(got) != 1 {
		t.Errorf("the granted origin saw %v", got)
	}
}

func TestNetworkGrantNameResolvingToAPrivateAddressIsRefused(t *testing.T) {
	o := newOrigin(t, nil)
	sb := nativeSandbox(t, SandboxOptions{})
	policy, err := sb.Policy()
	if err != nil {
		t.Fatal(err)
	}
	resolver := &loopNet{dns: map[string][]string{"rebind.example.com": {"127.0.0.1"}}}
	out, err := sb.Exec(context.Background(), fmt.Sprintf("%s -w ' %%{http_code}\\n' http://rebind.example.com:%d/",
		curl, o.port), ExecOptions{NetworkGrant: &NetworkGrant{Host: "rebind.example.com", Port: o.port,
		PolicyDigest: policy.Digest, Mediator: &NetworkMediator{Resolver: resolver, Dialer: resolver}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Stdout, "rebind.example.com resolves to 127.0.0.1 (loopback") ||
		!strings.HasSuffix(out.Stdout, " 403\n") || len(o.requests()) != 0 || len(resolver.dialed) != 0 {
		t.Errorf("%+v; dialed %v", out, resolver.dialed)
	}
}

func TestNetworkGrantWithAnotherPolicyDigestRunsNothing(t *testing.T) {
	o := newOrigin(t, nil)
	sb := nativeSandbox(t, SandboxOptions{})
	policy, err := sb.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if !validDigest(policy.Digest) || !strings.HasPrefix(policy.Text, "codeward sandbox policy 1\n") {
		t.Fatalf("policy %+v", policy)
	}
	// a new credential file to mask: the policy the approver saw is not the one now
	if err := os.WriteFile(filepath.Join(sb.Workspace(), ".env"), []byte("SECRET=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, digest := range []string{policy.Digest, "sha256:" + strings.Repeat("ab", 32)} {
		out, err := sb.Exec(context.Background(), fmt.Sprintf("touch ran; %s http://127.0.0.1:%d/", curl, o.port),
			ExecOptions{NetworkGrant: &NetworkGrant{Host: "127.0.0.1", Port: o.port, PolicyDigest: digest}})
		if err != nil {
			t.Fatal(err)
		}
		if !out.PolicyChanged || out.ExitCode != 125 || out.Ran || out.OK() ||
			!strings.Contains(out.SetupError, "re-approve against the current policy") {
			t.Errorf("%+v", out)
		}
		if g := out.NetworkGrant; g == nil || g.Listening || g.Connections != 0 {
			t.Errorf("summary %+v", g)
		}
	}
	if _, err := os.Stat(filepath.Join(sb.Workspace(), "ran")); err == nil || len(o.requests()) != 0 {
		t.Errorf("something ran or reached the origin: %v", o.requests())
	}
}

func TestNetworkGrantArgumentsAreChecked(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	policy, err := sb.Policy()
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Digest
	for _, g := range []NetworkGrant{
		{Host: "*.example.com", Port: 443, PolicyDigest: d},
		{Host: "example.com:443", PolicyDigest: d},
		{Host: "https://example.com", PolicyDigest: d},
		{Host: "127.1", PolicyDigest: d},
		{Host: "fe80::1%lo", PolicyDigest: d},
		{Host: "bücher.example", PolicyDigest: d},
		{Host: "", PolicyDigest: d},
		{Host: "example.com", Port: 65536, PolicyDigest: d},
		{Host: "example.com", Port: -1, PolicyDigest: d},
		{Host: "example.com"},
		{Host: "example.com", PolicyDigest: "sha256:xyz"},
		{Host: "example.com", PolicyDigest: d, Mediator: &NetworkMediator{ConnectTimeout: -1}},
	} {
		out, err := sb.Exec(context.Background(), "touch ran", ExecOptions{NetworkGrant: &g})
		var ge *NetworkGrantError
		if !errors.As(err, &ge) || !errors.Is(err, ErrNetworkGrant) || !errors.Is(err, ErrInvalidArgument) ||
			out.Ran {
			t.Errorf("%+v: %v", g, err)
		}
	}
	if _, err := os.Stat(filepath.Join(sb.Workspace(), "ran")); err == nil {
		t.Error("a refused grant ran its command")
	}
	ph, err := newProcessHostSandbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ph.Close()
	_, err = ph.Exec(context.Background(), "true", ExecOptions{
		NetworkGrant: &NetworkGrant{Host: "example.com", PolicyDigest: d}})
	if !errors.Is(err, ErrNetworkGrant) || !strings.Contains(err.Error(), "process-host backend cannot mediate") {
		t.Errorf("the process host: %v", err)
	}
	unavailable := &unavailableSandbox{workspace: "/x", cause: "none"}
	if _, err := unavailable.Policy(); !errors.Is(err, ErrSandboxUnavailable) {
		t.Errorf("the error-only sandbox's policy: %v", err)
	}
}

// settledGoroutines waits until at most want goroutines run; their stacks
// when they do not.
func settledGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for runtime.NumGoroutine() > want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > want {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before:\n%s", n, want, buf[:runtime.Stack(buf, true)])
	}
}

func TestNetworkGrantGoroutinesEndWithTheExec(t *testing.T) {
	o := newOrigin(t, nil)
	raw := newRawOrigin(t)
	sb := nativeSandbox(t, SandboxOptions{})
	policy, err := sb.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Exec(context.Background(), "true", ExecOptions{}); err != nil { // the sandbox is up
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	grant := func(port int) *NetworkGrant {
		return &NetworkGrant{Host: "127.0.0.1", Port: port, PolicyDigest: policy.Digest}
	}
	// tunnels left open by the command's background processes, a connection
	// that never sends its request, one forwarded request: all end with the exec
	held := fmt.Sprintf(`(exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n' >&3; `+
		`sleep 60 <&3) & (exec 3<>/dev/tcp/127.0.0.1/3128; sleep 60) & `, o.port)
	out, err := sb.Exec(context.Background(), held+held+fmt.Sprintf(
		"sleep 0.5; %s http://127.0.0.1:%d/hello", curl, o.port), ExecOptions{NetworkGrant: grant(o.port)})
	if err != nil || !strings.Contains(out.Stdout, "hello through the grant") || out.NetworkGrant.Connections != 3 {
		t.Fatalf("%+v, %v", out, err)
	}
	settledGoroutines(t, before)

	// the context ends while a forwarded request waits for the rest of its body
	// and a tunnel is open
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { time.Sleep(2 * time.Second); cancel() }()
	out, err = sb.Exec(ctx, fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/3128 4<>/dev/tcp/127.0.0.1/3128; `+
		`printf 'GET http://127.0.0.1:%d/ HTTP/1.1\r\nContent-Length: 100\r\n\r\n' >&3; `+
		`printf 'CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n' >&4; sleep 60`, raw.port, raw.port),
		ExecOptions{NetworkGrant: grant(raw.port)})
	if !errors.Is(err, context.Canceled) || !out.Cancelled {
		t.Fatalf("%+v, %v", out, err)
	}
	settledGoroutines(t, before)
}

// The grant handshake driven by hand, as a broken or hostile init would: a
// message that is not exactly the init's is refused, and nothing listens.
func TestNetworkGrantHandshakeRefusesAnythingButTheProxySocket(t *testing.T) {
	message := []byte("A3SM\x12\x00\x01\x00\x0e\x00\x00\x00\x38\x0c")
	for _, c := range []string{"wrong address", "udp socket", "two fds", "no fd", "bad magic", "other port",
		"long message"} {
		t.Run(c, func(t *testing.T) {
			g, err := checkGrant(&NetworkGrant{Host: "dl.example.com", Port: 443, PolicyDigest: testDigest})
			if err != nil {
				t.Fatal(err)
			}
			adm, err := openAdmission(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			var made []int
			sock := func(kind int) int {
				fd, err := syscall.Socket(syscall.AF_INET, kind|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				// never 127.0.0.1:3128: this host is not a sandbox
				if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
					t.Fatal(err)
				}
				made = append(made, fd)
				return fd
			}
			msg, fds := append([]byte(nil), message...), []int{sock(syscall.SOCK_STREAM)}
			switch c {
			case "udp socket":
				fds = []int{sock(syscall.SOCK_DGRAM)}
			case "two fds":
				fds = append(fds, sock(syscall.SOCK_STREAM))
			case "no fd":
				fds = nil
			case "bad magic":
				copy(msg, "XXXX")
			case "other port":
				msg[12], msg[13] = 80, 0
			case "long message":
				msg = append(msg, 0)
			}
			var rights []byte
			if fds != nil {
				rights = syscall.UnixRights(fds...)
			}
			if err := syscall.Sendmsg(adm.peer, msg, rights, nil, 0); err != nil {
				t.Fatal(err)
			}
			answer := make([]byte, 1)
			syscall.SetsockoptTimeval(adm.peer, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO,
				&syscall.Timeval{Sec: 10})
			if n, _, _, _, err := syscall.Recvmsg(adm.peer, answer, nil, 0); n != 0 || err != nil {
				t.Errorf("the mediator answered %q (%v)", answer[:max(n, 0)], err)
			}
			summary := adm.close()
			if summary.Listening {
				t.Error("listening")
			}
			for _, fd := range made {
				if v, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || v != 0 {
					t.Errorf("someone listens on a socket sent: %d %v", v, err)
				}
				syscall.Close(fd)
			}
		})
	}
}

// A CONNECT tunnel carries TLS end to end (the mediator reads nothing inside
// it) and relays a large body whole.
func TestNetworkGrantTunnelsTLSEndToEnd(t *testing.T) {
	const size = 8 << 20
	big := strings.Repeat("0123456789abcdef", size/16)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, big)
	}))
	defer secure.Close()
	port := secure.Listener.Addr().(*net.TCPAddr).Port
	sb := nativeSandbox(t, SandboxOptions{})
	cert := secure.Certificate()
	pemText := "-----BEGIN CERTIFICATE-----\n"
	for _, line := range chunk(base64Std(cert.Raw), 64) {
		pemText += line + "\n"
	}
	pemText += "-----END CERTIFICATE-----\n"
	if err := os.WriteFile(filepath.Join(sb.Workspace(), "ca.pem"), []byte(pemText), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runGranted(t, sb, "127.0.0.1", port, fmt.Sprintf(
		"%s --cacert ca.pem -o big https://127.0.0.1:%d/ && wc -c < big && sha256sum < big", curl, port))
	if !out.OK() {
		t.Fatalf("%+v", out)
	}
	lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != strconv.Itoa(size) ||
		!strings.HasPrefix(lines[1], sha256Hex(big)) {
		t.Errorf("got %q", out.Stdout)
	}
	if out.NetworkGrant.Connections != 1 || out.NetworkGrant.Refused != 0 {
		t.Errorf("summary %+v", out.NetworkGrant)
	}
}

func chunk(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
