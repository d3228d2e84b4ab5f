package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
)

// Blob names of a session's recording, beside logs.json and downloads.zip.
const (
	recordingBlob = "recording.json"
	replayBlob    = "replay.jpg" // the replay's JPEG frames, one after the other
)

// startRecording starts the inspector's recording of a session that just
// became READY and waits (a few seconds at most) until it records the
// browser's pages, so that the tenant, who connects after, finds its
// pages recorded.
func (m *Manager) startRecording(ctx context.Context, l *live) {
	l.mu.Lock()
	if l.stopping || l.rec != nil {
		l.mu.Unlock()
		return
	}
	r := startRecorder(m.base, l.b, m.o.Record, m.now, m.log)
	l.rec = r
	l.mu.Unlock()
	r.waitReady(ctx, 5*time.Second)
}

// takeRecorder detaches the recorder of l, if any.
func (m *Manager) takeRecorder(l *live) *recorder {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rec
	l.rec = nil
	return r
}

// stopRecording ends a recording that nobody keeps (a browser dropped).
func (m *Manager) stopRecording(l *live) {
	if r := m.takeRecorder(l); r != nil {
		r.stop()
	}
}

// endRecording ends the recording of a session that ends (with the
// pages' last picture: call it while the browser still runs) and returns
// a function that writes it to the blob store beside its logs (nil when
// there is nothing to write), which does not need the browser.
func (m *Manager) endRecording(l *live) func(context.Context) {
	r := m.takeRecorder(l)
	if r == nil || m.d.Blobs == nil {
		if r != nil {
			r.stop()
		}
		return nil
	}
	rec, replay := r.stop()
	return func(ctx context.Context) {
		if len(replay) > 0 {
			if err := m.d.Blobs.Put(ctx, artifactKey(l.projectID, l.id, replayBlob), bytes.NewReader(replay)); err != nil {
				m.log.Warn("wallcrawler: keep replay", "session", l.id, "err", err)
				rec.Frames = nil
			}
		}
		data, err := json.Marshal(rec)
		if err == nil {
			err = m.d.Blobs.Put(ctx, artifactKey(l.projectID, l.id, recordingBlob), bytes.NewReader(data))
		}
		if err != nil {
			m.log.Warn("wallcrawler: keep recording", "session", l.id, "err", err)
		}
	}
}

// liveRecorder returns the recorder of a session running here, or nil.
func (m *Manager) liveRecorder(id string) *recorder {
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec
}

// Recording returns what the inspector recorded of a session's pages:
// so far while it runs on this node, as kept once it ended. A session
// of which no recording is kept, or whose browser another node runs, has
// an empty one.
func (m *Manager) Recording(ctx context.Context, p auth.Principal, id string) (Recording, error) {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return Recording{}, err
	}
	if r := m.liveRecorder(id); r != nil {
		rec, _ := r.snapshot()
		return rec, nil
	}
	var rec Recording
	if m.d.Blobs == nil {
		return rec, nil
	}
	rc, err := m.d.Blobs.Get(ctx, artifactKey(x.ProjectID, id, recordingBlob))
	if errors.Is(err, blob.ErrNotFound) {
		return rec, nil
	}
	if err != nil {
		return Recording{}, err
	}
	defer rc.Close()
	if err := json.NewDecoder(io.LimitReader(rc, 64<<20)).Decode(&rec); err != nil {
		return Recording{}, fmt.Errorf("sessions: read recording: %w", err)
	}
	return rec, nil
}

// ReplayFrame returns frame n (0-based) of a session's replay, a JPEG.
// A frame that does not exist is ErrNotFound.
func (m *Manager) ReplayFrame(ctx context.Context, p auth.Principal, id string, n int) ([]byte, error) {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if r := m.liveRecorder(id); r != nil {
		rec, replay := r.snapshot()
		if n < 0 || n >= len(rec.Frames) {
			return nil, fmt.Errorf("%w: frame %d", ErrNotFound, n)
		}
		f := rec.Frames[n]
		return replay[f.Offset : f.Offset+f.Length], nil
	}
	rec, err := m.Recording(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if n < 0 || n >= len(rec.Frames) || m.d.Blobs == nil {
		return nil, fmt.Errorf("%w: frame %d", ErrNotFound, n)
	}
	f := rec.Frames[n]
	rc, err := m.d.Blobs.Get(ctx, artifactKey(x.ProjectID, id, replayBlob))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, fmt.Errorf("%w: replay of %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if sk, ok := rc.(io.Seeker); ok {
		if _, err := sk.Seek(f.Offset, io.SeekStart); err != nil {
			return nil, fmt.Errorf("sessions: read replay: %w", err)
		}
	} else if _, err := io.CopyN(io.Discard, rc, f.Offset); err != nil {
		return nil, fmt.Errorf("sessions: read replay: %w", err)
	}
	out := make([]byte, f.Length)
	if _, err := io.ReadFull(rc, out); err != nil {
		return nil, fmt.Errorf("sessions: read replay: %w", err)
	}
	return out, nil
}

// Replay returns a session's recording with its whole replay blob (the
// frames' JPEGs, located by Recording.Frames).
func (m *Manager) Replay(ctx context.Context, p auth.Principal, id string) (Recording, []byte, error) {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return Recording{}, nil, err
	}
	if r := m.liveRecorder(id); r != nil {
		rec, replay := r.snapshot()
		return rec, replay, nil
	}
	rec, err := m.Recording(ctx, p, id)
	if err != nil || len(rec.Frames) == 0 || m.d.Blobs == nil {
		rec.Frames = nil
		return rec, nil, err
	}
	rc, err := m.d.Blobs.Get(ctx, artifactKey(x.ProjectID, id, replayBlob))
	if errors.Is(err, blob.ErrNotFound) {
		rec.Frames = nil
		return rec, nil, nil
	}
	if err != nil {
		return Recording{}, nil, err
	}
	defer rc.Close()
	replay, err := io.ReadAll(io.LimitReader(rc, 1<<30))
	if err != nil {
		return Recording{}, nil, fmt.Errorf("sessions: read replay: %w", err)
	}
	frames := rec.Frames[:0]
	for _, f := range rec.Frames {
		if f.Offset >= 0 && f.Length >= 0 && f.Offset+f.Length <= int64(len(replay)) {
			frames = append(frames, f)
		}
	}
	rec.Frames = frames
	return rec, replay, nil
}
