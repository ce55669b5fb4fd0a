//go:build cgo

package codeward

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// The proxy protocols a granted command's tools speak, read strictly and
// answered plainly (python/codeward/netgrant/_protocol.py, decision for
// decision; tests/vectors/netgrant_requests.json holds them). One port
// serves all three, told apart by the first byte (5: SOCKS5; else HTTP):
//
//   - HTTP CONNECT host:port: a tunnel; TLS stays end to end.
//   - HTTP absolute form (GET http://host[:port]/path): forwarded in origin
//     form with the Proxy-* and hop-by-hop headers dropped, Host set to the
//     target's authority and Connection: close. One request per connection:
//     its head and exactly its Content-Length bytes of body go to the
//     origin, nothing after them (a pipelined request is read and dropped,
//     never passed on undecided). Framing an origin could read otherwise
//     (Transfer-Encoding, conflicting Content-Length, folded or malformed
//     header lines) is refused.
//   - SOCKS5 CONNECT by name or by address, no authentication.

const maxRequestHead = 16 * 1024

// SOCKS5 reply codes (RFC 1928 6).
const (
	socksFailure         = 1
	socksNotAllowed      = 2
	socksHostUnreachable = 4
	socksRefused         = 5
	socksTTLExpired      = 6
	socksCommand         = 7
	socksAddressType     = 8
)

type requestKind int

const (
	kindUnknown requestKind = iota
	kindConnect
	kindHTTP
	kindSOCKS5
)

// refusal is a connection the mediator does not admit: the words the
// command's tool prints, the HTTP status and the SOCKS code to answer with,
// and the protocol to answer in once the first byte told it.
type refusal struct {
	reason string
	status int
	socks  byte
	kind   requestKind
}

func (r *refusal) Error() string { return r.reason }

func refuse(status int, socks byte, format string, args ...any) *refusal {
	return &refusal{reason: fmt.Sprintf(format, args...), status: status, socks: socks}
}

// proxyRequest is a target a client asked for, before any decision.
type proxyRequest struct {
	kind      requestKind
	host      string // as the client wrote it (Latin-1; brackets removed from an IPv6 literal)
	port      int
	forward   []byte // what goes to the origin first: a rewritten head, and bytes read past it
	bodyLeft  int    // http: body bytes still to come from the client after forward
	pipelined bool   // http: the client sent more after the request (never forwarded)
}

// requestConn is where a request is read from and the SOCKS5 negotiation
// written to.
type requestConn struct {
	r io.Reader
	w io.Writer
}

// recvSome reads at most n bytes: a refusal at the end of the input (the
// client closed) or when the request's time is up.
func (c requestConn) recvSome(n int) ([]byte, error) {
	buf := make([]byte, n)
	for {
		got, err := c.r.Read(buf)
		if got > 0 {
			return buf[:got], nil
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
			return nil, refuse(408, socksTTLExpired, "no complete request in time")
		case errors.Is(err, io.EOF):
			return nil, refuse(400, socksFailure, "the client closed before a complete request")
		}
		return nil, err
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (c requestConn) recvExact(n int) ([]byte, error) {
	var data []byte
	for len(data) < n {
		chunk, err := c.recvSome(n - len(data))
		if err != nil {
			return nil, err
		}
		data = append(data, chunk...)
	}
	return data, nil
}

// readRequest reads one proxy request from a fresh connection. The caller
// bounds the whole request with one deadline, not each read. Errors are a
// *refusal or the connection's own.
func readRequest(c requestConn) (*proxyRequest, error) {
	first, err := c.recvSome(1)
	if err != nil {
		return nil, err
	}
	switch first[0] {
	case 5:
		req, err := readSOCKS5(c)
		var ref *refusal
		if errors.As(err, &ref) {
			ref.kind = kindSOCKS5
		}
		return req, err
	case 4:
		return nil, refuse(400, socksFailure, "SOCKS4 is not supported; use socks5h://")
	}
	return readHTTP(c, first)
}

// grantedReply tells the client its tunnel is open (CONNECT, SOCKS5); a
// forwarded request needs nothing.
func grantedReply(kind requestKind) []byte {
	switch kind {
	case kindConnect:
		return []byte("HTTP/1.1 200 Connection established\r\n\r\n")
	case kindSOCKS5:
		return []byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	}
	return nil
}

// refusalReply is the refusal in the client's protocol.
func refusalReply(kind requestKind, r *refusal) []byte {
	if kind == kindSOCKS5 {
		return []byte{5, r.socks, 0, 1, 0, 0, 0, 0, 0, 0}
	}
	text := "codeward network grant: " + r.reason
	body := text + "\n"
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n", r.status, reasonPhrase(text), len(body))
	return []byte(head + body)
}

// reasonPhrase is printable ASCII on one line, at most 300 characters.
func reasonPhrase(text string) string {
	var b strings.Builder
	n := 0
	for _, c := range text {
		if n == 300 {
			break
		}
		if c >= ' ' && c <= '~' {
			b.WriteRune(c)
		} else {
			b.WriteByte('?')
		}
		n++
	}
	return b.String()
}

// show is Python's repr(text[:100]).
func show(text string) string {
	r := []rune(text)
	if len(r) > 100 {
		r = r[:100]
	}
	return pyRepr(string(r))
}

// -- HTTP --------------------------------------------------------------------

var (
	crlf2 = []byte("\r\n\r\n")
	// hop-by-hop headers of the client-proxy leg, never passed to the origin
	hopHeaders = map[string]bool{
		"proxy-connection": true, "proxy-authorization": true, "connection": true, "keep-alive": true,
	}
)

func readHTTP(c requestConn, first []byte) (*proxyRequest, error) {
	data := append([]byte(nil), first...)
	for !bytes.Contains(data, crlf2) {
		if len(data) > maxRequestHead {
			return nil, refuse(431, socksNotAllowed, "the request head is longer than %d bytes", maxRequestHead)
		}
		chunk, err := c.recvSome(4096)
		if err != nil {
			return nil, err
		}
		data = append(data, chunk...)
	}
	head, rest, _ := bytes.Cut(data, crlf2)
	if len(head) > maxRequestHead {
		return nil, refuse(431, socksNotAllowed, "the request head is longer than %d bytes", maxRequestHead)
	}
	lines := bytes.Split(head, []byte("\r\n"))
	parts := bytes.Split(lines[0], []byte(" "))
	if len(parts) != 3 || !bytes.HasPrefix(parts[2], []byte("HTTP/1.")) {
		return nil, refuse(400, socksNotAllowed, "not an HTTP/1.x proxy request")
	}
	method, target := parts[0], latin1(parts[1])
	if string(method) == "CONNECT" {
		host, port, ref := authority(target, 0)
		if ref != nil {
			return nil, ref
		}
		return &proxyRequest{kind: kindConnect, host: host, port: port, forward: rest}, nil
	}
	scheme, after, found := strings.Cut(target, "://")
	lower := strings.ToLower(scheme)
	if !found || !isASCII(scheme) || (lower != "http" && lower != "https") {
		return nil, refuse(400, socksNotAllowed, "a request to a proxy names its target in "+
			"absolute form (http://host/path), or tunnels with CONNECT")
	}
	if lower == "https" {
		return nil, refuse(400, socksNotAllowed,
			"an https:// URL goes through a CONNECT tunnel, not a plain request")
	}
	cut := len(after)
	if i := strings.IndexAny(after, "/?#"); i >= 0 {
		cut = i
	}
	auth, path := after[:cut], after[cut:]
	path, _, _ = strings.Cut(path, "#")
	if path == "" {
		path = "/"
	}
	if strings.HasPrefix(path, "?") {
		path = "/" + path
	}
	host, port, ref := authority(auth, 80)
	if ref != nil {
		return nil, ref
	}
	headers, ref := headerLines(lines[1:])
	if ref != nil {
		return nil, ref
	}
	length, ref := bodyLength(headers)
	if ref != nil {
		return nil, ref
	}
	out := bytes.Join([][]byte{method, latin1Bytes(path), parts[2]}, []byte(" "))
	out = append(out, "\r\nHost: "...)
	out = append(out, latin1Bytes(auth)...)
	for _, h := range headers {
		if !hopHeaders[h.name] && h.name != "host" {
			out = append(append(out, "\r\n"...), h.line...)
		}
	}
	out = append(out, "\r\nConnection: close\r\n\r\n"...)
	body := rest
	if len(body) > length {
		body = body[:length]
	}
	return &proxyRequest{
		kind: kindHTTP, host: host, port: port,
		forward:   append(out, body...),
		bodyLeft:  length - len(body),
		pipelined: len(rest) > length,
	}, nil
}

// tokenChars are the characters of an HTTP header name (RFC 9110 token).
const tokenChars = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

type headerLine struct {
	name string // lower case
	line []byte
}

// headerLines refuses a line an origin could read otherwise: folded, without
// a colon, a name that is not a token (spaces before the colon included), or
// a control character in the value.
func headerLines(lines [][]byte) ([]headerLine, *refusal) {
	out := make([]headerLine, 0, len(lines))
	for _, line := range lines {
		name, value, colon := bytes.Cut(line, []byte(":"))
		ok := colon && len(name) > 0
		for _, c := range name {
			ok = ok && strings.IndexByte(tokenChars, c) >= 0
		}
		if !ok {
			return nil, refuse(400, socksNotAllowed, "malformed header line %s", show(latin1(line)))
		}
		for _, c := range value {
			if (c < 0x20 && c != '\t') || c == 0x7f {
				return nil, refuse(400, socksNotAllowed, "a control character in header %s",
					show(string(name)))
			}
		}
		out = append(out, headerLine{strings.ToLower(string(name)), line})
	}
	return out, nil
}

// bodyLength is the request body's length from Content-Length (0 without
// one); a refusal where the framing is not one plain length.
func bodyLength(headers []headerLine) (int, *refusal) {
	values := map[string]bool{}
	for _, h := range headers {
		if h.name == "transfer-encoding" {
			return 0, refuse(501, socksNotAllowed, "a request body with Transfer-Encoding is "+
				"not forwarded; send it with Content-Length")
		}
	}
	var value string
	for _, h := range headers {
		if h.name == "content-length" {
			_, v, _ := bytes.Cut(h.line, []byte(":"))
			value = string(bytes.Trim(v, " \t\n\r\x0b\x0c"))
			values[value] = true
		}
	}
	if len(values) == 0 {
		return 0, nil
	}
	if len(values) > 1 || value == "" || len(value) > 18 || strings.Trim(value, "0123456789") != "" {
		return 0, refuse(400, socksNotAllowed, "the request has no single valid Content-Length")
	}
	n, _ := strconv.Atoi(value)
	return n, nil
}

// authority reads host:port ([v6]:port); the port is optional only where
// a default (not 0) is given.
func authority(text string, def int) (string, int, *refusal) {
	if strings.Contains(text, "@") {
		return "", 0, refuse(400, socksNotAllowed, "user information in a proxy target is refused")
	}
	if strings.HasPrefix(text, "[") {
		end := strings.Index(text, "]")
		if end < 0 {
			return "", 0, refuse(400, socksNotAllowed, "malformed target %s", show(text))
		}
		host, after := text[1:end], text[end+1:]
		if after == "" {
			return portOfNone(text, host, def)
		}
		if !strings.HasPrefix(after, ":") {
			return "", 0, refuse(400, socksNotAllowed, "malformed target %s", show(text))
		}
		return portOf(text, host, after[1:])
	}
	i := strings.LastIndex(text, ":")
	if i < 0 {
		return portOfNone(text, text, def)
	}
	return portOf(text, text[:i], text[i+1:])
}

func portOfNone(text, host string, def int) (string, int, *refusal) {
	if def == 0 {
		return "", 0, refuse(400, socksNotAllowed, "the target %s has no port", show(text))
	}
	return host, def, nil
}

// portOf checks a port as the Python mediator does: ASCII digits (a
// Unicode digit such as U+00B9 is not a port), no leading zero, 1 to 65535.
func portOf(text, host, portText string) (string, int, *refusal) {
	ok := portText != "" && len(portText) <= 5 && portText[0] != '0'
	for i := 0; ok && i < len(portText); i++ {
		ok = portText[i] >= '0' && portText[i] <= '9'
	}
	n := 0
	if ok {
		n, _ = strconv.Atoi(portText)
	}
	if !ok || n < 1 || n > 65535 {
		return "", 0, refuse(400, socksNotAllowed, "the target %s has no valid port", show(text))
	}
	return host, n, nil
}

// -- SOCKS5 ------------------------------------------------------------------

func readSOCKS5(c requestConn) (*proxyRequest, error) {
	count, err := c.recvExact(1)
	if err != nil {
		return nil, err
	}
	methods, err := c.recvExact(int(count[0]))
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(methods, 0) < 0 {
		c.w.Write([]byte{5, 0xff})
		return nil, refuse(400, socksNotAllowed, "SOCKS5 without the no-authentication method")
	}
	if _, err := c.w.Write([]byte{5, 0}); err != nil {
		return nil, err
	}
	hdr, err := c.recvExact(4)
	if err != nil {
		return nil, err
	}
	version, command, atyp := hdr[0], hdr[1], hdr[3]
	if version != 5 {
		return nil, refuse(400, socksFailure, "malformed SOCKS5 request")
	}
	var host string
	switch atyp {
	case 1:
		b, err := c.recvExact(4)
		if err != nil {
			return nil, err
		}
		host = netip.AddrFrom4([4]byte(b)).String()
	case 4:
		b, err := c.recvExact(16)
		if err != nil {
			return nil, err
		}
		host = formatIPv6(netip.AddrFrom16([16]byte(b)))
	case 3:
		n, err := c.recvExact(1)
		if err != nil {
			return nil, err
		}
		raw, err := c.recvExact(int(n[0]))
		if err != nil {
			return nil, err
		}
		if !isASCII(string(raw)) {
			return nil, refuse(400, socksFailure, "a SOCKS5 name must be ASCII (an A-label)")
		}
		host = string(raw)
	default:
		return nil, refuse(400, socksAddressType, "SOCKS5 address type %d is unknown", atyp)
	}
	p, err := c.recvExact(2)
	if err != nil {
		return nil, err
	}
	port := int(p[0])<<8 | int(p[1])
	if command != 1 {
		what := map[byte]string{2: "BIND", 3: "UDP ASSOCIATE"}[command]
		if what == "" {
			what = fmt.Sprintf("command %d", command)
		}
		return nil, refuse(400, socksCommand, "SOCKS5 %s is refused: only CONNECT", what)
	}
	if port == 0 {
		return nil, refuse(400, socksFailure, "port 0 is not a target")
	}
	return &proxyRequest{kind: kindSOCKS5, host: host, port: port}, nil
}

// -- the decision -------------------------------------------------------------

// admit is the canonical host of an admitted request; a refusal for
// anything but the grant's origin.
func admit(g *grant, req *proxyRequest) (string, *refusal) {
	host, kind, err := canonicalHost(req.host, "target")
	if err != nil {
		return "", refuse(400, socksNotAllowed, "%s", err.Error())
	}
	if !g.admits(host, req.port) {
		asked := host + ":" + strconv.Itoa(req.port)
		if kind == kindIPv6 {
			asked = "[" + host + "]:" + strconv.Itoa(req.port)
		}
		return "", refuse(403, socksNotAllowed, "%s is not the granted origin; this command may reach %s",
			asked, g.origin())
	}
	return host, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// latin1Bytes encodes a Latin-1 string (runes below 256) back to its bytes.
func latin1Bytes(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		out = append(out, byte(r))
	}
	return out
}
