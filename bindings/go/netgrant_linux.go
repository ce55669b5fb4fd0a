//go:build cgo && linux

package codeward

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The host side of one granted command (Python's Admission), in goroutines
// that end with the command:
//
//  1. openAdmission makes an AF_UNIX SOCK_SEQPACKET pair; the far end goes
//     with the exec (grant_fd).
//  2. Before the command starts, the sandbox's init sends on it the proxy's
//     socket, bound to 127.0.0.1:3128 inside the sandbox. The admission
//     checks it (a TCP socket bound to that address, nothing else), listens
//     on it and answers 'L'; only then does the command start.
//  3. Each connection the command makes to the proxy is accepted here,
//     outside the sandbox, and served by a goroutine of its own: the
//     request is read and decided (netgrant_protocol.go), the origin
//     resolved and connected (netgrant_upstream.go), and the bytes relayed
//     (io.Copy between TCP connections splices on Linux).
//  4. When the command ends, the init shuts the proxy's socket down, and
//     close ends what is left: the listener, every connection, the
//     goroutines (the exec's context cancels a resolution in progress).

const (
	grantMessageType    = 18
	grantMessageVersion = 1
	grantMessageSize    = 14 // A3S_GRANT_MESSAGE_SIZE
	maxRefusalsKept     = 10
	// how long close waits for the connections' goroutines (a custom Resolver or
	// Dialer that ignores its context could hold one; it ends when that returns)
	grantCloseWait = 2 * time.Second
	// how long the client's leftover input is read and dropped after an answer
	grantLinger = 2 * time.Second
)

type admission struct {
	g       *grant
	control *net.UnixConn // our end of the grant socket pair
	peer    int           // the exec's end (grant_fd), closed by close
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	listener *net.TCPListener
	live     map[net.Conn]struct{}
	active   int
	summary  NetworkGrantSummary
}

// openAdmission makes the grant socket pair for one exec and starts waiting
// for the sandbox's proxy socket.
func openAdmission(ctx context.Context, g *grant) (*admission, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, &CoreError{Status: "system", Code: -1, Errno: errnoOf(err),
			Message: "socketpair for the network grant: " + err.Error()}
	}
	f := os.NewFile(uintptr(fds[0]), "codeward-grant")
	conn, err := net.FileConn(f) // a dup, non-blocking, in the runtime's poller
	f.Close()
	if err != nil {
		syscall.Close(fds[1])
		return nil, &CoreError{Status: "system", Code: -1, Errno: errnoOf(err),
			Message: "the network grant's socket: " + err.Error()}
	}
	a := &admission{g: g, control: conn.(*net.UnixConn), peer: fds[1], live: map[net.Conn]struct{}{}}
	a.ctx, a.cancel = context.WithCancel(ctx)
	a.summary = NetworkGrantSummary{Host: g.host, Port: g.port, PolicyDigest: g.digest}
	a.wg.Add(1)
	go a.handshake()
	return a, nil
}

func errnoOf(err error) int {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return int(errno)
	}
	return 0
}

// close stops listening, ends every connection and waits for the
// goroutines; it returns what the command did with its grant.
func (a *admission) close() NetworkGrantSummary {
	a.mu.Lock()
	if a.closed {
		s := a.summaryLocked()
		a.mu.Unlock()
		return s
	}
	a.closed = true
	listener := a.listener
	live := make([]net.Conn, 0, len(a.live))
	for c := range a.live {
		live = append(live, c)
	}
	a.mu.Unlock()
	a.cancel()
	a.control.Close()
	if listener != nil {
		listener.Close()
	}
	for _, c := range live {
		c.Close()
	}
	syscall.Close(a.peer)
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	timer := time.NewTimer(grantCloseWait)
	select {
	case <-done:
	case <-timer.C:
	}
	timer.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.summaryLocked()
}

func (a *admission) summaryLocked() NetworkGrantSummary {
	s := a.summary
	s.Refusals = append([]string(nil), s.Refusals...)
	return s
}

func (a *admission) noteRefusal(reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.summary.Refused++
	if len(a.summary.Refusals) < maxRefusalsKept {
		a.summary.Refusals = append(a.summary.Refusals, reason)
	}
}

// handshake takes the sandbox's proxy socket, listens on it and says so;
// anything else refuses the grant (the init sees the socket close and
// starts nothing). Then it accepts the command's connections.
func (a *admission) handshake() {
	defer a.wg.Done()
	buf := make([]byte, 64)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, flags, _, err := a.control.ReadMsgUnix(buf, oob)
	var fds []int
	n, oobn = max(n, 0), max(oobn, 0)
	if err == nil {
		if msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_RIGHTS {
					if rights, rerr := syscall.ParseUnixRights(&m); rerr == nil {
						fds = append(fds, rights...)
					}
				}
			}
		}
	}
	listener := proxyListener(buf[:n], fds, flags, err)
	a.mu.Lock()
	if listener != nil && a.closed {
		listener.Close()
		listener = nil
	}
	a.listener = listener
	a.summary.Listening = listener != nil
	a.mu.Unlock()
	if listener == nil {
		a.control.Close() // the init sees the refusal
		return
	}
	if _, err := a.control.Write([]byte{'L'}); err != nil {
		return
	}
	a.accept(listener)
}

// proxyListener is the socket the init sent, listening, if it is exactly
// what the grant protocol says (native/include/a3s/a3s.h, "Network
// grants"); else nil, and every descriptor received is closed.
func proxyListener(msg []byte, fds []int, flags int, err error) *net.TCPListener {
	ok := err == nil && flags&(syscall.MSG_CTRUNC|syscall.MSG_TRUNC) == 0 &&
		len(msg) == grantMessageSize && len(fds) == 1 &&
		string(msg[:4]) == "A3SM" &&
		binary.LittleEndian.Uint16(msg[4:]) == grantMessageType &&
		binary.LittleEndian.Uint16(msg[6:]) == grantMessageVersion &&
		binary.LittleEndian.Uint32(msg[8:]) == grantMessageSize &&
		binary.LittleEndian.Uint16(msg[12:]) == GrantProxyPort
	if ok {
		fd := fds[0]
		domain, e1 := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_DOMAIN)
		typ, e2 := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
		sa, e3 := syscall.Getsockname(fd)
		in4, isIn4 := sa.(*syscall.SockaddrInet4)
		ok = e1 == nil && e2 == nil && e3 == nil && domain == syscall.AF_INET &&
			typ == syscall.SOCK_STREAM && isIn4 && in4.Port == GrantProxyPort &&
			in4.Addr == [4]byte{127, 0, 0, 1}
	}
	if ok {
		ok = syscall.Listen(fds[0], min(syscall.SOMAXCONN, 256)) == nil
	}
	if !ok {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil
	}
	f := os.NewFile(uintptr(fds[0]), "codeward-grant-proxy")
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil
	}
	tl, _ := l.(*net.TCPListener)
	if tl == nil {
		l.Close()
	}
	return tl
}

// accept serves each connection in a goroutine of its own, at most
// MaxConnections at once (more are closed at once), until the init shuts
// the socket down or close closes it.
func (a *admission) accept(l *net.TCPListener) {
	for {
		conn, err := l.AcceptTCP()
		if err != nil {
			return
		}
		a.mu.Lock()
		full := a.closed || a.active >= a.g.med.MaxConnections
		if !full {
			a.active++
			a.live[conn] = struct{}{}
			a.wg.Add(1)
		}
		a.mu.Unlock()
		if full {
			conn.Close()
			a.noteRefusal("too many connections at once")
			continue
		}
		go a.serve(conn)
	}
}

// track adds a connection to the live ones close ends; false once closed.
func (a *admission) track(c net.Conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.live[c] = struct{}{}
	return true
}

func (a *admission) untrack(c net.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.live, c)
}

// serve decides one connection: one request, then a tunnel or one
// forwarded request; every refusal is answered in the client's protocol.
func (a *admission) serve(client *net.TCPConn) {
	var upstream net.Conn
	kind := kindUnknown
	defer func() {
		if p := recover(); p != nil { // no input may end a connection without an answer
			client.Write(refusalReply(kind, refuse(500, socksFailure,
				"the proxy could not handle this request")))
		}
		client.Close()
		if upstream != nil {
			upstream.Close()
			a.untrack(upstream)
		}
		a.mu.Lock()
		delete(a.live, client)
		a.active--
		a.mu.Unlock()
		a.wg.Done()
	}()
	client.SetReadDeadline(time.Now().Add(a.g.med.HandshakeTimeout))
	req, err := readRequest(requestConn{client, client})
	var ref *refusal
	if errors.As(err, &ref) {
		a.noteRefusal(ref.reason)
		client.Write(refusalReply(ref.kind, ref))
		finish(client)
		return
	}
	if err != nil {
		return // the client went away
	}
	kind = req.kind
	client.SetReadDeadline(time.Time{})
	host, ref := admit(a.g, req)
	if ref == nil {
		upstream, _, ref = openUpstream(a.ctx, a.g, host, req.port)
	}
	if ref == nil && !a.track(upstream) {
		ref = refuse(403, socksNotAllowed, "the command's grant has ended")
	}
	if ref != nil {
		a.noteRefusal(ref.reason)
		client.Write(refusalReply(req.kind, ref))
		finish(client)
		return
	}
	a.mu.Lock()
	a.summary.Connections++
	a.mu.Unlock()
	if reply := grantedReply(req.kind); reply != nil {
		if _, err := client.Write(reply); err != nil {
			return
		}
	}
	if req.kind == kindHTTP {
		a.forwardOne(client, upstream, req)
		return
	}
	// a tunnel (CONNECT, SOCKS5): the grant is the origin, whatever flows inside
	if len(req.forward) > 0 {
		if _, err := upstream.Write(req.forward); err != nil {
			return
		}
	}
	relay(client, upstream)
}

// finish ends a client's connection after the answer without losing it: a
// close with unread input would reset the connection (and the client could
// lose the answer), so the write side is shut first and what the client
// still sends is read and dropped, for at most grantLinger (close ends it
// at once).
func finish(client *net.TCPConn) {
	client.CloseWrite()
	client.SetReadDeadline(time.Now().Add(grantLinger))
	io.Copy(io.Discard, client)
}

// forwardOne sends one plain HTTP request, its head and exactly its body,
// and passes only the origin's answer back. Whatever the client sends past
// the body (a pipelined request, perhaps for another origin) is read and
// dropped, never forwarded: the connection closes after the answer, so the
// client's next request comes on a new connection and is decided again.
func (a *admission) forwardOne(client *net.TCPConn, upstream net.Conn, req *proxyRequest) {
	const pipelinedNote = "a request pipelined behind the first was dropped, not forwarded"
	if req.pipelined {
		a.noteRefusal(pipelinedNote)
	}
	if _, err := upstream.Write(req.forward); err != nil {
		return
	}
	var answered atomic.Bool
	reader := make(chan struct{})
	go func() { // the client's side: the body's rest to the origin, then nothing
		defer close(reader)
		bodyLeft, pipelined := req.bodyLeft, req.pipelined
		buf := make([]byte, 32*1024)
		for {
			n, err := client.Read(buf)
			data := buf[:n]
			if bodyLeft > 0 && len(data) > 0 && !answered.Load() {
				part := data[:min(bodyLeft, len(data))]
				if _, werr := upstream.Write(part); werr != nil {
					client.Close()
					return
				}
				bodyLeft -= len(part)
				data = data[len(part):]
			}
			if len(data) > 0 && !pipelined {
				pipelined = true
				a.noteRefusal(pipelinedNote)
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !answered.Load() {
					upstream.Close() // the client failed: the exchange is over
				}
				return // at its end the client half-closed: the answer still comes
			}
		}
	}()
	_, err := io.Copy(client, upstream)
	answered.Store(true)
	if err == nil { // the answer is complete: end without losing the client's tail
		client.CloseWrite()
		client.SetReadDeadline(time.Now().Add(grantLinger))
	} else {
		client.Close()
	}
	<-reader
}

// relay moves bytes both ways until both directions have ended: an end of
// file is passed on as a half-close, an error ends both.
func relay(a, b net.Conn) {
	var once sync.Once
	both := func() { once.Do(func() { a.Close(); b.Close() }) }
	done := make(chan struct{}, 2)
	copyOne := func(dst, src net.Conn) {
		if _, err := io.Copy(dst, src); err != nil {
			both()
		} else if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			both()
		}
		done <- struct{}{}
	}
	go copyOne(b, a)
	go copyOne(a, b)
	<-done
	<-done
}
