//go:build cgo

package codeward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The connection to a granted origin, under the download tool's address
// rules (python/codeward/netgrant/_upstream.py, download/_addresses.py):
//
//   - a grant that names an IP address reaches that address, whatever it is:
//     the approver saw it;
//   - a grant of "localhost" exactly reaches the loopback addresses, without
//     asking any resolver (RFC 6761);
//   - a grant of any other name is resolved once, and every answer must be a
//     public unicast address (the tables below): one private answer refuses
//     the connection, so a name that rebinds to 127.0.0.1, a cloud metadata
//     address or the LAN reaches nothing. The connection goes to the answers
//     just checked, never to a second resolution.

const (
	maxAnswers  = 64 // more answers than this for one name is refused, not truncated
	maxAttempts = 8  // addresses tried per connection
)

// addressRow is one refused block: the network (as Python writes it), what
// it is, and the document that reserves it.
type addressRow struct {
	network, name, reference string
}

// The whole address policy, one row per block, in Python's order (the first
// row that contains an address names the refusal). IPv4: everything not in
// a row is allowed. IPv6: only 2000::/3 is, minus the rows inside it.
var grantIPv4Table = []addressRow{
	{"0.0.0.0/8", "'this network' (0.0.0.0 reaches the local host)", "RFC 791, RFC 1122 3.2.1.3"},
	{"10.0.0.0/8", "private network", "RFC 1918"},
	{"100.64.0.0/10", "shared address space (carrier-grade NAT)", "RFC 6598"},
	{"127.0.0.0/8", "loopback", "RFC 1122 3.2.1.3"},
	{"169.254.0.0/16", "link-local (cloud metadata services live here)", "RFC 3927"},
	{"172.16.0.0/12", "private network", "RFC 1918"},
	{"192.0.0.0/24", "IETF protocol assignments (DS-Lite, NAT64 discovery ...)", "RFC 6890"},
	{"192.0.2.0/24", "documentation (TEST-NET-1)", "RFC 5737"},
	{"192.31.196.0/24", "AS112 DNS sink", "RFC 7535"},
	{"192.52.193.0/24", "automatic multicast tunnelling relays", "RFC 7450"},
	{"192.88.99.0/24", "6to4 relay anycast (deprecated)", "RFC 7526"},
	{"192.168.0.0/16", "private network", "RFC 1918"},
	{"192.175.48.0/24", "AS112 direct delegation", "RFC 7534"},
	{"198.18.0.0/15", "benchmarking", "RFC 2544"},
	{"198.51.100.0/24", "documentation (TEST-NET-2)", "RFC 5737"},
	{"203.0.113.0/24", "documentation (TEST-NET-3)", "RFC 5737"},
	{"224.0.0.0/4", "multicast", "RFC 5771"},
	{"240.0.0.0/4", "reserved, and 255.255.255.255 limited broadcast", "RFC 1112 4, RFC 919"},
	{"168.63.129.16/32", "Azure platform endpoint (wire server)", "Microsoft Azure documentation"},
}

var grantIPv6Table = []addressRow{
	{"::/128", "unspecified address", "RFC 4291 2.5.2"},
	{"::1/128", "loopback", "RFC 4291 2.5.3"},
	{"::ffff:0:0/96", "IPv4-mapped address", "RFC 4291 2.5.5.2"},
	{"::/96", "IPv4-compatible address (deprecated)", "RFC 4291 2.5.5.1"},
	{"::ffff:0:0:0/96", "IPv4-translated address", "RFC 2765 2.1"},
	{"64:ff9b::/96", "NAT64 well-known prefix", "RFC 6052 2.1"},
	{"64:ff9b:1::/48", "NAT64 local-use prefix", "RFC 8215"},
	{"100::/64", "discard-only prefix", "RFC 6666"},
	{"100:0:0:1::/64", "dummy prefix", "RFC 9780"},
	{"2001::/32", "Teredo tunnelling (embeds an IPv4 address)", "RFC 4380"},
	{"2001::/23", "IETF protocol assignments (benchmarking, ORCHID, AMT ...)", "RFC 2928"},
	{"2001:db8::/32", "documentation", "RFC 3849"},
	{"2002::/16", "6to4 (embeds an IPv4 address)", "RFC 3056"},
	{"2620:4f:8000::/48", "AS112 direct delegation", "RFC 7534"},
	{"3ffe::/16", "former 6bone test network", "RFC 3701"},
	{"3fff::/20", "documentation", "RFC 9637"},
	{"5f00::/16", "segment routing (SRv6) SIDs", "RFC 9602"},
	{"fc00::/7", "unique local address", "RFC 4193"},
	{"fe80::/10", "link-local", "RFC 4291 2.5.6"},
	{"fec0::/10", "site-local (deprecated)", "RFC 3879"},
	{"ff00::/8", "multicast", "RFC 4291 2.7"},
}

var (
	grantIPv4Prefixes = prefixes(grantIPv4Table)
	grantIPv6Prefixes = prefixes(grantIPv6Table)
	globalUnicast     = netip.MustParsePrefix("2000::/3")
)

func prefixes(rows []addressRow) []netip.Prefix {
	out := make([]netip.Prefix, len(rows))
	for i, r := range rows {
		out[i] = netip.MustParsePrefix(r.network)
	}
	return out
}

// addressRefusal says why a may not be connected to for a grant of a name,
// or "" when it is public unicast (Python's refusal()).
func addressRefusal(a netip.Addr) string {
	if a.Is4() {
		for i, p := range grantIPv4Prefixes {
			if p.Contains(a) {
				r := grantIPv4Table[i]
				return fmt.Sprintf("%s, %s (%s)", r.name, r.network, r.reference)
			}
		}
		return ""
	}
	if a.Zone() != "" {
		return "an address with a zone id (link-scoped)"
	}
	for i, p := range grantIPv6Prefixes {
		if p.Contains(a) {
			r := grantIPv6Table[i]
			return fmt.Sprintf("%s, %s (%s)", r.name, r.network, r.reference)
		}
	}
	if !globalUnicast.Contains(a) {
		return "outside 2000::/3, the only global unicast IPv6 space (RFC 4291 2.4)"
	}
	return ""
}

// addrText is an address as Python's ipaddress writes it.
func addrText(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	text := formatIPv6(a)
	if a.Zone() != "" {
		text += "%" + a.Zone()
	}
	return text
}

// hostPort is host:port, an IPv6 host in brackets.
func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// seconds is Python's "{:g}" of a timeout in seconds.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'g', -1, 64)
}

// openUpstream connects to the admitted host:port for g; a *refusal (with
// the status and SOCKS code to answer) when it cannot or must not.
func openUpstream(ctx context.Context, g *grant, host string, port int) (net.Conn, []string, *refusal) {
	ctx, cancel := context.WithTimeout(ctx, g.med.ConnectTimeout)
	defer cancel()
	addrs, ref := grantAddresses(ctx, g, host)
	if ref != nil {
		return nil, nil, ref
	}
	var failures []string
	tried := make([]string, 0, len(addrs))
	for i, ip := range addrs {
		if i == maxAttempts {
			break
		}
		tried = append(tried, hostPort(ip, port))
		conn, err := g.med.Dialer.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			return conn, tried, nil
		}
		failures = append(failures, ip+": "+strerror(err))
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return nil, tried, &refusal{reason: fmt.Sprintf("%s:%d did not answer within %s s", host, port,
			seconds(g.med.ConnectTimeout)), status: 504, socks: socksTTLExpired}
	}
	return nil, tried, &refusal{reason: fmt.Sprintf("could not connect to %s:%d (%s)", host, port,
		strings.Join(failures, "; ")), status: 502, socks: socksRefused}
}

// grantAddresses are the addresses a connection to host may go to.
func grantAddresses(ctx context.Context, g *grant, host string) ([]string, *refusal) {
	if g.kind != kindName {
		return []string{host}, nil
	}
	if host == "localhost" {
		return []string{"127.0.0.1", "::1"}, nil
	}
	answers, err := g.med.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &refusal{reason: fmt.Sprintf("%s did not resolve within %s s", host,
				seconds(g.med.ConnectTimeout)), status: 504, socks: socksTTLExpired}
		}
		return nil, &refusal{reason: fmt.Sprintf("cannot resolve %s: %s", host, resolveError(err)),
			status: 502, socks: socksHostUnreachable}
	}
	if len(answers) == 0 {
		return nil, &refusal{reason: host + " has no address", status: 502, socks: socksHostUnreachable}
	}
	if len(answers) > maxAnswers {
		return nil, &refusal{reason: fmt.Sprintf("%s has %d addresses, more than %d", host,
			len(answers), maxAnswers), status: 502, socks: socksHostUnreachable}
	}
	var pinned []string
	for _, a := range answers { // every answer, before any connection
		text := addrText(a)
		if why := addressRefusal(a); why != "" {
			return nil, &refusal{reason: fmt.Sprintf("%s resolves to %s (%s); a grant of a name "+
				"reaches public addresses only: grant the address itself to reach it", host, text, why),
				status: 403, socks: socksNotAllowed}
		}
		seen := false
		for _, p := range pinned {
			seen = seen || p == text
		}
		if !seen {
			pinned = append(pinned, text)
		}
	}
	return pinned, nil
}

// strerror is a connection error as the C library words it ("Connection
// refused"), else Go's text.
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		text := errno.Error()
		if text != "" {
			return strings.ToUpper(text[:1]) + text[1:]
		}
	}
	return err.Error()
}

func resolveError(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.Err
	}
	return err.Error()
}
