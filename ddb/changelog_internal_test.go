package ddb

import "testing"

// TestSeqTrackerWatermark: the stable watermark stays below every sequence
// number still in flight, whatever order they finish in, and an abandoned
// number (a batch released without commit) moves it on like a committed
// one.
func TestSeqTrackerWatermark(t *testing.T) {
	var s seqTracker
	a, b, c := s.next(), s.next(), s.next()
	if a != 1 || b != 2 || c != 3 {
		t.Fatalf("numbers %d %d %d, want 1 2 3", a, b, c)
	}
	steps := []struct {
		done []uint64
		want uint64
	}{
		{nil, 0},          // 1, 2, 3 in flight
		{[]uint64{c}, 0},  // the last commits first: 1 still holds it
		{[]uint64{a}, 1},  // 2 still in flight
		{[]uint64{b}, 3},  // 2 done too (abandoned or committed): all three are
		{[]uint64{}, 3},   // nothing in flight
		{[]uint64{99}, 3}, // a number not in flight changes nothing
	}
	for i, st := range steps {
		s.done(st.done)
		if got := s.stable(); got != st.want {
			t.Fatalf("step %d (done %v): stable %d, want %d", i, st.done, got, st.want)
		}
	}
	d := s.next()
	if got := s.stable(); got != d-1 {
		t.Fatalf("with %d in flight: stable %d, want %d", d, got, d-1)
	}
}

// TestReleasedBatchFreesWatermark: a wbatch released without committing
// (a write that failed after staging its change record) gives its sequence
// numbers back, so stream readers are not held at the watermark.
func TestReleasedBatchFreesWatermark(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := s.seq.stable()
	b := s.newBatch()
	b.seqs = append(b.seqs, s.seq.next(), s.seq.next())
	if got := s.seq.stable(); got != before {
		t.Fatalf("stable %d with two numbers in flight, want %d", got, before)
	}
	b.release(s)
	if got := s.seq.stable(); got != before+2 {
		t.Fatalf("stable %d after release, want %d", got, before+2)
	}
}

// TestStreamWakeWaitsForWatermark: a change of a watched table is readable
// only once every lower sequence number has settled, so the waker holds the
// wake until then, whether the lower number was issued before the reader
// started waiting or after, and whether it commits or is abandoned.
func TestStreamWakeWaitsForWatermark(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		var seq seqTracker
		var w streamWaker
		const watched, other = 1, 2
		low := seq.next() // a write of another table, in flight
		ch := w.wait(watched, &seq)
		mine := seq.next()
		seq.done([]uint64{mine})
		w.settled([]uint64{watched}, []uint64{mine}, true, &seq)
		select {
		case <-ch:
			t.Fatalf("abandon=%v: woken while %d is in flight below the change %d", abandon, low, mine)
		default:
		}
		seq.done([]uint64{low})
		if abandon {
			w.settled(nil, nil, false, &seq)
		} else {
			w.settled([]uint64{other}, []uint64{low}, true, &seq)
		}
		select {
		case <-ch:
		default:
			t.Fatalf("abandon=%v: not woken once the watermark passed the change", abandon)
		}
		// Waiting while a write is in flight: it may be of this table,
		// so its settling wakes the reader.
		inflight := seq.next()
		ch = w.wait(watched, &seq)
		seq.done([]uint64{inflight})
		w.settled([]uint64{other}, []uint64{inflight}, true, &seq)
		select {
		case <-ch:
		default:
			t.Fatalf("abandon=%v: a write in flight at the wait settled without a wake", abandon)
		}
	}
}
