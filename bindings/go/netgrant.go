//go:build cgo

package codeward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Network grants (docs/security.md, "Network grants"): one approved origin
// for one command. A sandbox has no network; an Exec with a *NetworkGrant
// gives its command a proxy at 127.0.0.1:3128 inside the sandbox, whose
// connections a mediator in this process (netgrant_*.go) accepts, reads and
// decides: it reaches the granted host and port and nothing else, with the
// same decisions as the Python package's mediator (python/codeward/netgrant,
// tests/vectors/netgrant_requests.json). The grant ends with the command.

// GrantProxyPort is where a granted command finds its proxy inside the
// sandbox (A3S_GRANT_PROXY_PORT): HTTP_PROXY, HTTPS_PROXY and ALL_PROXY
// name it.
const GrantProxyPort = 3128

// The defaults a zero [NetworkMediator] stands for (Python's NetworkMediator).
const (
	// DefaultGrantConnectTimeout bounds resolving and connecting to the
	// origin, per connection.
	DefaultGrantConnectTimeout = 30 * time.Second
	// DefaultGrantHandshakeTimeout bounds reading one whole proxy request.
	DefaultGrantHandshakeTimeout = 15 * time.Second
	// DefaultGrantMaxConnections is how many connections of one command are
	// served at once; more are closed at once.
	DefaultGrantMaxConnections = 128
)

// NetworkGrant lets the one command of an Exec reach one origin: Host
// exactly (a DNS name, a dotted quad or an IPv6 address, with or without
// brackets; no wildcard, scheme, path or port) on Port, or on 443 and 80
// when Port is 0. PolicyDigest is the digest of the sandbox policy the
// approver was shown ([Sandbox.Policy]): the command runs only under that
// policy (else nothing runs and the output says PolicyChanged).
//
// A name is compared in one canonical form: lower-case, without a trailing
// dot; an internationalised name must be given and requested in its A-label
// form (xn--...), which this package does not compute. "localhost" and
// "127.0.0.1" are different hosts. A grant of a name reaches public
// unicast addresses only (every answer of the resolver is checked, and the
// connection goes to the checked answers); a grant of an address reaches
// that address; a grant of "localhost" reaches 127.0.0.1 and ::1 without
// asking a resolver.
type NetworkGrant struct {
	Host         string
	Port         int
	PolicyDigest string
	// Mediator configures the mediator that serves this grant (nil: the
	// system's resolver, direct TCP connections and the defaults).
	Mediator *NetworkMediator
}

// NetworkMediator configures how a grant's connections are served; the
// zero value (or nil) is the default. It holds no state: each Exec serves
// its grant with goroutines of its own, which end when the command does.
type NetworkMediator struct {
	// Resolver resolves a granted name (nil: the system's, net.DefaultResolver;
	// the name is asked with a trailing dot, so no search domain applies).
	// Every answer is checked: one that is not public unicast refuses the
	// connection.
	Resolver Resolver
	// Dialer connects to a checked address (nil: a plain net.Dialer). The
	// address checks stay in the mediator, outside it.
	Dialer Dialer
	// ConnectTimeout bounds resolving and connecting, per connection (0:
	// [DefaultGrantConnectTimeout]).
	ConnectTimeout time.Duration
	// HandshakeTimeout bounds reading one whole proxy request (0:
	// [DefaultGrantHandshakeTimeout]); a client that trickles is refused
	// with 408 when it is up.
	HandshakeTimeout time.Duration
	// MaxConnections is how many connections are served at once (0:
	// [DefaultGrantMaxConnections]); more are closed at once.
	MaxConnections int
}

// Resolver is what the mediator resolves a granted name with;
// *net.Resolver has this method.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer is what the mediator connects to a checked address with;
// *net.Dialer has this method.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// NetworkGrantSummary is what a granted command did with its grant
// ([CommandOutput].NetworkGrant; Python's Admission.summary()).
type NetworkGrantSummary struct {
	// Host, Port and PolicyDigest are the grant's, the host canonical
	// (Port 0: 443 and 80).
	Host         string
	Port         int
	PolicyDigest string
	// Listening: the sandbox handed over its proxy socket and the mediator
	// listened on it (false when nothing ran, such as a changed policy).
	Listening bool
	// Connections counts the connections admitted and connected to the origin.
	Connections int
	// Refused counts the connections and requests refused; Refusals says
	// why, for the first few (at most 10).
	Refused  int
	Refusals []string
}

// ErrNetworkGrant is matched (errors.Is) by every *[NetworkGrantError].
var ErrNetworkGrant = errors.New("codeward: network grant refused")

// NetworkGrantError reports a grant that is malformed or that this sandbox
// cannot mediate (Python's NetworkGrantError). errors.Is matches it with
// [ErrNetworkGrant] and [ErrInvalidArgument]. A connection the mediator
// refuses is not an error of the host's: the command's tool gets the
// refusal (an HTTP status or a SOCKS reply), and the output's NetworkGrant
// counts it.
type NetworkGrantError struct {
	// Message says what was refused and why.
	Message string
}

// Error returns the message.
func (e *NetworkGrantError) Error() string { return "codeward: " + e.Message }

// Is makes errors.Is(err, ErrNetworkGrant) and errors.Is(err,
// ErrInvalidArgument) true.
func (e *NetworkGrantError) Is(target error) bool {
	return target == ErrNetworkGrant || target == ErrInvalidArgument
}

// SandboxPolicy is the effective policy of a sandbox as one canonical text,
// and its digest ("sha256:" and 64 hex digits): what a human approves a
// network grant against (docs/security.md, "The policy digest").
type SandboxPolicy struct {
	Text, Digest string
}

// grant is a checked NetworkGrant: its host canonical, its ports, its kind.
type grant struct {
	host   string
	kind   hostKind
	port   int // 0: the default ports
	digest string
	med    NetworkMediator
}

// defaultGrantPorts are the ports of a grant without one: HTTPS and HTTP.
var defaultGrantPorts = []int{443, 80}

func (g *grant) ports() []int {
	if g.port == 0 {
		return defaultGrantPorts
	}
	return []int{g.port}
}

func (g *grant) admits(host string, port int) bool {
	if host != g.host {
		return false
	}
	for _, p := range g.ports() {
		if p == port {
			return true
		}
	}
	return false
}

// origin is the grant in words, as the prompt shows it (Python's grant_target).
func (g *grant) origin() string {
	name := g.host
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if g.port == 0 {
		return fmt.Sprintf("%s:443 and %s:80 (no port given: HTTPS and HTTP)", name, name)
	}
	return name + ":" + strconv.Itoa(g.port)
}

// checkGrant validates a grant as Python's NetworkGrant.make does.
func checkGrant(ng *NetworkGrant) (*grant, error) {
	host, kind, err := canonicalHost(ng.Host, "host")
	if err != nil {
		return nil, &NetworkGrantError{Message: err.Error()}
	}
	if ng.Port < 0 || ng.Port > 65535 {
		return nil, &NetworkGrantError{Message: fmt.Sprintf(
			"the port must be an integer from 1 to 65535 (0: 443 and 80), not %d", ng.Port)}
	}
	if !validDigest(ng.PolicyDigest) {
		return nil, &NetworkGrantError{Message: "a grant needs the sandbox policy digest it " +
			"was approved on (Sandbox.Policy().Digest: \"sha256:\" and 64 hex digits)"}
	}
	g := &grant{host: host, kind: kind, port: ng.Port, digest: ng.PolicyDigest}
	if ng.Mediator != nil {
		g.med = *ng.Mediator
	}
	if g.med.ConnectTimeout < 0 || g.med.HandshakeTimeout < 0 || g.med.MaxConnections < 0 {
		return nil, &NetworkGrantError{Message: "the mediator's timeouts and MaxConnections " +
			"must not be negative (0: the defaults)"}
	}
	if g.med.ConnectTimeout == 0 {
		g.med.ConnectTimeout = DefaultGrantConnectTimeout
	}
	if g.med.HandshakeTimeout == 0 {
		g.med.HandshakeTimeout = DefaultGrantHandshakeTimeout
	}
	if g.med.MaxConnections == 0 {
		g.med.MaxConnections = DefaultGrantMaxConnections
	}
	if g.med.Resolver == nil {
		g.med.Resolver = systemResolver{}
	}
	if g.med.Dialer == nil {
		g.med.Dialer = &net.Dialer{}
	}
	return g, nil
}

func validDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// systemResolver is Python's system_resolver: the name with a trailing dot
// (no search domain), IPv4 answers as IPv4 addresses.
type systemResolver struct{}

func (systemResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, network, host+".")
	for i, a := range addrs {
		// Go gives IPv4 answers in the IPv4-mapped form; a mapped answer is checked
		// as the IPv4 address it reaches
		addrs[i] = a.Unmap()
	}
	return addrs, err
}

// hostKind is what a canonical host is.
type hostKind int

const (
	kindName hostKind = iota
	kindIPv4
	kindIPv6
)

// grantForbidden are never part of an exact host: wildcards, paths, user
// information, ports, spaces (Python's _FORBIDDEN).
const grantForbidden = "*?/\\@#%[] \t\r\n:"

// canonicalHost is Python's netgrant canonical_host: the canonical form of
// an exact host and its kind, or an error saying what is wrong (what is
// "host" for a grant, "target" for a request). text is Latin-1: one rune
// per byte of a request (latin1 decodes it).
func canonicalHost(text, what string) (string, hostKind, error) {
	if text == "" {
		return "", 0, fmt.Errorf("the %s must be a non-empty string", what)
	}
	literal := text
	if strings.HasPrefix(text, "[") && strings.HasSuffix(text, "]") && len(text) >= 2 {
		literal = text[1 : len(text)-1]
	}
	if strings.Contains(literal, ":") {
		var bad []rune
		for _, c := range literal {
			if (strings.ContainsRune(grantForbidden, c) && c != ':') || !pyPrintable(c) {
				bad = append(bad, c)
			}
		}
		if len(bad) > 0 {
			return "", 0, fmt.Errorf("the %s %s is not an exact IP address: it contains %s "+
				"(no zone id, port, path or wildcard)", what, pyRepr(text), reprSet(bad))
		}
		addr, err := netip.ParseAddr(literal)
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return "", 0, fmt.Errorf("the %s %s is not a host: a port goes in the grant's port "+
				"field, and an IPv6 address must be valid", what, pyRepr(text))
		}
		return formatIPv6(addr), kindIPv6, nil
	}
	var bad []rune
	for _, c := range text {
		if strings.ContainsRune(grantForbidden, c) || c < 0x20 || c == 0x7f {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		return "", 0, fmt.Errorf("the %s %s is not an exact host name or IP address: it "+
			"contains %s (no scheme, port, path or wildcard)", what, pyRepr(text), reprSet(bad))
	}
	refused := func(why string) error {
		return fmt.Errorf("the %s %s is refused: %s", what, pyRepr(text), why)
	}
	for _, c := range text {
		if c >= 0x80 {
			// Python maps a non-ASCII name with IDNA (UTS-46); this package does not
			return "", 0, refused("a non-ASCII host name must be given in its A-label form (xn--...)")
		}
	}
	mapped := strings.ToLower(text)
	name := strings.TrimSuffix(mapped, ".")
	if endsInNumber(name) {
		if mapped != name || !dottedQuad(name) {
			return "", 0, refused(fmt.Sprintf("the numeric host %s is not a canonical dotted "+
				"quad (shorthand, octal, hex and integer forms are refused)", pyRepr(mapped)))
		}
		return name, kindIPv4, nil
	}
	if name == "" || len(name) > 253 {
		return "", 0, refused("the host name is empty or longer than 253 characters")
	}
	for _, label := range strings.Split(name, ".") {
		if !ldhLabel(label) {
			return "", 0, refused(fmt.Sprintf("the host label %s is not letters, digits and "+
				"inner hyphens (1-63 long)", pyRepr(label)))
		}
	}
	return name, kindName, nil
}

// endsInNumber is the WHATWG rule: a host whose last label is numeric
// (digits, or 0x and hex digits) is an IPv4 address, never a name.
func endsInNumber(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X") {
		for _, c := range last[2:] {
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// dottedQuad: four decimal octets 0-255 without leading zeros.
func dottedQuad(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || (len(p) > 1 && p[0] == '0') {
			return false
		}
		n := 0
		for _, c := range p {
			if c < '0' || c > '9' {
				return false
			}
			n = n*10 + int(c-'0')
		}
		if n > 255 {
			return false
		}
	}
	return true
}

// ldhLabel: [a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?
func ldhLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// formatIPv6 writes an IPv6 address as Python's ipaddress does: lower-case
// hex groups, the longest run of two or more zero groups (the first of equal
// ones) as "::", and no dotted IPv4 part (an IPv4-mapped address included).
func formatIPv6(a netip.Addr) string {
	b := a.As16()
	var g [8]uint16
	for i := range g {
		g[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	best, bestLen := -1, 1
	for i := 0; i < 8; {
		if g[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && g[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	hexes := func(gs []uint16) string {
		s := make([]string, len(gs))
		for i, v := range gs {
			s[i] = strconv.FormatUint(uint64(v), 16)
		}
		return strings.Join(s, ":")
	}
	if best < 0 {
		return hexes(g[:])
	}
	return hexes(g[:best]) + "::" + hexes(g[best+bestLen:])
}

// pyPrintable is Python's str.isprintable for one character of Latin-1 (or
// ASCII): not a control, not U+00A0 (a space separator), not U+00AD (a
// format character).
func pyPrintable(c rune) bool {
	switch {
	case c < 0x20, c >= 0x7f && c <= 0xa0, c == 0xad:
		return false
	}
	return true
}

// pyRepr is Python's repr() of a str whose characters are Latin-1: what the
// Python mediator's messages show, so the two say the same.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == rune(quote):
			b.WriteByte('\\')
			b.WriteByte(quote)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case !pyPrintable(c):
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// reprSet is Python's ", ".join(map(repr, sorted(set(chars)))).
func reprSet(chars []rune) string {
	seen := map[rune]bool{}
	var uniq []rune
	for _, c := range chars {
		if !seen[c] {
			seen[c] = true
			uniq = append(uniq, c)
		}
	}
	sort.Slice(uniq, func(i, j int) bool { return uniq[i] < uniq[j] })
	parts := make([]string, len(uniq))
	for i, c := range uniq {
		parts[i] = pyRepr(string(c))
	}
	return strings.Join(parts, ", ")
}

// latin1 decodes bytes as Latin-1 (one rune per byte), as the Python
// mediator reads a request target.
func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}
