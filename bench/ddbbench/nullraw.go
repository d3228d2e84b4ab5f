package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// The raw null server (-null-listen with -null-raw) gives the null server's
// answers through a minimal HTTP/1.1 loop instead of net/http: per
// connection it reads a request head and its Content-Length body and writes
// the precomputed answer, flushing when no further request is buffered.
// It understands only the requests ddbbench's clients send (no chunked
// bodies, no Expect), and exists to measure what net/http itself costs per
// request: the difference between the two null servers is what a leaner
// HTTP layer could save any Go server here.

// serveNullRaw serves the raw null server for cfg on l until ctx is done.
func serveNullRaw(ctx context.Context, cfg *config, l net.Listener, logw io.Writer) error {
	h, err := newNullHandler(cfg)
	if err != nil {
		l.Close()
		return err
	}
	heads := map[*nullResponse][]byte{}
	for _, r := range append([]*nullResponse{h.unknown}, mapValues(h.byOp)...) {
		heads[r] = fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %s\r\nX-Amz-Crc32: %s\r\nX-Amzn-Requestid: null-",
			r.status, http.StatusText(r.status), nullContentType[0], r.length[0], r.crc[0])
	}
	fmt.Fprintf(logw, "ddbbench: raw null DynamoDB server (table %s, items ~%d bytes, Query page %d) listening on %s\n", cfg.table, cfg.itemBytes, cfg.pageSize, l.Addr())
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	go func() {
		<-ctx.Done()
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.serveRaw(c, heads)
			c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

var (
	headerLength = []byte("content-length:")
	headerTarget = []byte("x-amz-target:")
)

// serveRaw answers the requests of one connection until it closes or sends
// something this loop does not understand.
func (h *nullHandler) serveRaw(c net.Conn, heads map[*nullResponse][]byte) {
	br := bufio.NewReaderSize(c, 64<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	for {
		if _, err := br.ReadSlice('\n'); err != nil { // request line
			return
		}
		length, op := -1, ""
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				break
			}
			if len(line) > len(headerLength) && bytes.EqualFold(line[:len(headerLength)], headerLength) {
				n, err := strconv.Atoi(string(bytes.TrimSpace(line[len(headerLength):])))
				if err != nil || n < 0 {
					return
				}
				length = n
			} else if len(line) > len(headerTarget) && bytes.EqualFold(line[:len(headerTarget)], headerTarget) {
				op = string(bytes.TrimPrefix(bytes.TrimSpace(line[len(headerTarget):]), []byte(nullTargetPrefix)))
			}
		}
		if length < 0 {
			return // no Content-Length: not a request this loop serves
		}
		if _, err := br.Discard(length); err != nil {
			return
		}
		resp := h.unknown
		if r, ok := h.byOp[op]; ok {
			resp = r
		}
		bw.Write(heads[resp])
		bw.Write(strconv.AppendUint(bw.AvailableBuffer(), h.requests.Add(1), 10))
		bw.WriteString("\r\n\r\n")
		bw.Write(resp.body)
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}
