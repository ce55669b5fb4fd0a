//go:build cgo

package codeward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tests/vectors/netgrant_requests.json: the same request bytes give the
// same decision (status or SOCKS code, reason, what goes to the origin) as
// in the Python mediator (tests/netgrant/test_grant_vectors.py).
var netgrantVectorsPath = filepath.Join(vectorsDir(), "netgrant_requests.json")

type netgrantCase struct {
	Name    string              `json:"name"`
	Origin  string              `json:"origin"`
	Request string              `json:"request"`
	DNS     map[string][]string `json:"dns"`
	Expect  struct {
		Forward   bool   `json:"forward"`
		Target    string `json:"target"`
		Dialed    string `json:"dialed"`
		Status    *int   `json:"status"`
		Socks     *int   `json:"socks"`
		Reason    string `json:"reason"`
		Sent      string `json:"sent"`
		BodyLeft  int    `json:"body_left"`
		Pipelined bool   `json:"pipelined"`
	} `json:"expect"`
}

// fakeNet answers names from a table and records what is resolved and dialed.
type fakeNet struct {
	dns      map[string][]string
	resolved []string
	dialed   []string
}

func (f *fakeNet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.resolved = append(f.resolved, host)
	answers, ok := f.dns[host]
	if !ok {
		answers = []string{"93.184.215.14"}
	}
	var out []netip.Addr
	for _, a := range answers {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func (f *fakeNet) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	f.dialed = append(f.dialed, address)
	ours, theirs := net.Pipe()
	theirs.Close()
	return ours, nil
}

// grantOf is a vector's origin as a grant: host:port, [v6]:port or a host.
func grantOf(t *testing.T, origin string, med *NetworkMediator) *grant {
	t.Helper()
	host, port := origin, 0
	if strings.HasPrefix(origin, "[") {
		h, p, _ := strings.Cut(origin[1:], "]:")
		host, port = h, atoi(t, p)
	} else if i := strings.LastIndex(origin, ":"); i >= 0 {
		host, port = origin[:i], atoi(t, origin[i+1:])
	}
	g, err := checkGrant(&NetworkGrant{Host: host, Port: port, PolicyDigest: testDigest, Mediator: med})
	if err != nil {
		t.Fatalf("%s: %v", origin, err)
	}
	return g
}

const testDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNetgrantVectors(t *testing.T) {
	var file struct {
		Cases []netgrantCase `json:"cases"`
	}
	if err := json.Unmarshal(readVectors(t, netgrantVectorsPath), &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 100 {
		t.Fatalf("only %d cases", len(file.Cases))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			fake := &fakeNet{dns: c.DNS}
			g := grantOf(t, c.Origin, &NetworkMediator{Resolver: fake, Dialer: fake})
			var replies bytes.Buffer
			req, err := readRequest(requestConn{bytes.NewReader(latin1Bytes(c.Request)), &replies})
			var host string
			var ref *refusal
			if !errors.As(err, &ref) && err != nil {
				t.Fatalf("not a refusal: %v", err)
			}
			if ref == nil {
				host, ref = admit(g, req)
			}
			if ref == nil {
				var conn net.Conn
				conn, _, ref = openUpstream(context.Background(), g, host, req.port)
				if conn != nil {
					conn.Close()
				}
			}
			e := c.Expect
			if ref != nil {
				if e.Forward {
					t.Fatalf("refused (%d/%d): %s", ref.status, ref.socks, ref.reason)
				}
				kind := ref.kind
				if req != nil {
					kind = req.kind
				}
				if kind == kindSOCKS5 {
					if e.Socks == nil || int(ref.socks) != *e.Socks {
						t.Errorf("SOCKS code %d, want %v", ref.socks, e.Socks)
					}
				} else if e.Status == nil || ref.status != *e.Status {
					t.Errorf("status %d, want %v", ref.status, e.Status)
				}
				if ref.reason != e.Reason {
					t.Errorf("reason\n got %q\nwant %q", ref.reason, e.Reason)
				}
				if len(fake.dialed) != 0 {
					t.Errorf("dialed %v", fake.dialed)
				}
				return
			}
			if !e.Forward {
				t.Fatalf("forwarded, want %v %q", e.Status, e.Reason)
			}
			if got := hostPort(host, req.port); got != e.Target {
				t.Errorf("target %s, want %s", got, e.Target)
			}
			if len(fake.dialed) == 0 || fake.dialed[0] != e.Dialed {
				t.Errorf("dialed %v, want %s first", fake.dialed, e.Dialed)
			}
			if !bytes.Equal(req.forward, latin1Bytes(e.Sent)) {
				t.Errorf("sent\n got %q\nwant %q", req.forward, e.Sent)
			}
			switch req.kind {
			case kindSOCKS5:
				if e.Socks == nil || *e.Socks != 0 {
					t.Errorf("granted SOCKS5, want %v", e.Socks)
				}
			case kindConnect:
				if e.Status == nil || *e.Status != 200 {
					t.Errorf("opened a tunnel, want %v", e.Status)
				}
			default:
				if e.Status != nil || req.bodyLeft != e.BodyLeft || req.pipelined != e.Pipelined {
					t.Errorf("body left %d, pipelined %v; want %d, %v (status %v)",
						req.bodyLeft, req.pipelined, e.BodyLeft, e.Pipelined, e.Status)
				}
			}
			if (g.kind != kindName || g.host == "localhost") && len(fake.resolved) != 0 {
				t.Errorf("an address or localhost asked the resolver: %v", fake.resolved)
			}
		})
	}
}

// A refusal is answered in the client's protocol: a status line and body
// that say why (no header injection through a reason), or a SOCKS reply.
func TestNetgrantRefusalReplies(t *testing.T) {
	got := string(refusalReply(kindConnect, refuse(403, socksNotAllowed,
		"x.example:443 is not the granted origin\r\nX: y")))
	want := "HTTP/1.1 403 codeward network grant: x.example:443 is not the granted origin??X: y\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 70\r\nConnection: close\r\n\r\n" +
		"codeward network grant: x.example:443 is not the granted origin\r\nX: y\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if got := refusalReply(kindSOCKS5, refuse(400, socksCommand, "no")); !bytes.Equal(got,
		[]byte{5, 7, 0, 1, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("SOCKS reply %v", got)
	}
	// a reason with Latin-1 text: the phrase is ASCII, the body UTF-8
	ref := refuse(400, socksNotAllowed, "malformed header line %s", show(latin1([]byte("X\xe9: a"))))
	if got := string(refusalReply(kindHTTP, ref)); !strings.Contains(got, "line 'X?: a'\r\n") ||
		!strings.HasSuffix(got, "line 'Xé: a'\n") {
		t.Errorf("got %q", got)
	}
}

// A request that trickles is refused when the whole request's time is up.
func TestNetgrantSlowRequestIs408(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go io.WriteString(client, "CONNECT dl.example.com:443 HTTP/1.1\r\n")
	server.SetReadDeadline(timeNowPlus(200))
	_, err := readRequest(requestConn{server, server})
	var ref *refusal
	if !errors.As(err, &ref) || ref.status != 408 || ref.socks != socksTTLExpired {
		t.Fatalf("got %v", err)
	}
}

func timeNowPlus(ms int) time.Time { return time.Now().Add(time.Duration(ms) * time.Millisecond) }
