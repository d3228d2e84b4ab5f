package alert

import (
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
)

// receivedMail is one message accepted by testSMTPServer.
type receivedMail struct {
	From string
	To   []string
	Data []byte
}

// testSMTPServer is a minimal RFC 5321 server (EHLO/HELO, MAIL, RCPT, DATA,
// RSET, NOOP, QUIT; no auth, no TLS) on a loopback listener. Replies to RCPT
// and to the end of DATA can be scripted; unscripted replies are 250.
type testSMTPServer struct {
	t  *testing.T
	ln net.Listener

	mu          sync.Mutex
	rcptReplies []string // consumed one per RCPT command
	dataReplies []string // consumed one per message end (after ".")
	mails       []receivedMail
	dataEnds    int // number of complete DATA transfers, accepted or not
	wg          sync.WaitGroup
}

func newTestSMTPServer(t *testing.T, rcptReplies, dataReplies []string) *testSMTPServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &testSMTPServer{t: t, ln: ln, rcptReplies: rcptReplies, dataReplies: dataReplies}
	s.wg.Go(s.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *testSMTPServer) Addr() string { return s.ln.Addr().String() }

func (s *testSMTPServer) Mails() []receivedMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]receivedMail(nil), s.mails...)
}

func (s *testSMTPServer) DataEnds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dataEnds
}

func (s *testSMTPServer) next(replies *[]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(*replies) == 0 {
		return "250 OK"
	}
	r := (*replies)[0]
	*replies = (*replies)[1:]
	return r
}

func (s *testSMTPServer) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.handle(conn) })
	}
}

func (s *testSMTPServer) handle(conn net.Conn) {
	defer conn.Close()
	tp := textproto.NewConn(conn)
	reply := func(line string) bool {
		return tp.PrintfLine("%s", line) == nil
	}
	if !reply("220 localhost test ESMTP") {
		return
	}
	var cur receivedMail
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			if !reply("250-localhost greets "+arg) || !reply("250 8BITMIME") {
				return
			}
		case "HELO", "NOOP":
			reply("250 OK")
		case "RSET":
			cur = receivedMail{}
			reply("250 OK")
		case "MAIL":
			cur = receivedMail{From: addrArg(arg)}
			reply("250 OK")
		case "RCPT":
			r := s.next(&s.rcptReplies)
			if strings.HasPrefix(r, "250") {
				cur.To = append(cur.To, addrArg(arg))
			}
			reply(r)
		case "DATA":
			if len(cur.To) == 0 {
				reply("503 need RCPT")
				continue
			}
			reply("354 go ahead")
			data, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			r := s.next(&s.dataReplies)
			s.mu.Lock()
			s.dataEnds++
			if strings.HasPrefix(r, "250") {
				cur.Data = data
				s.mails = append(s.mails, cur)
			}
			s.mu.Unlock()
			cur = receivedMail{}
			reply(r)
		case "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 not implemented")
		}
	}
}

// addrArg extracts the address from "FROM:<a@b> BODY=8BITMIME".
func addrArg(arg string) string {
	_, rest, _ := strings.Cut(arg, "<")
	addr, _, _ := strings.Cut(rest, ">")
	return addr
}
