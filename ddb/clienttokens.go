package ddb

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
)

// ClientRequestTokens of TransactWriteItems.
//
// A transaction that commits with a token also writes, in the same Pebble
// batch as its items, a token record and an entry of the token expiry index:
//
//	t<token> → version 1, expiry (Unix ms, 8 bytes BE), request hash (32 bytes),
//	           replay answer (JSON; empty when it has no ConsumedCapacity)
//	q<expiry Unix ms, 8 bytes BE><token> → ""
//
// so after any crash either both the transaction and its token survive or
// neither does, and a retry after a restart gets the first call's answer
// instead of applying the transaction twice. Tokens are store-wide:
// deleting a table leaves them alone. Expired records are deleted when
// looked up and by the background loop (sweepTokens), which walks the
// expiry index.
//
// The state of a transaction still running (TransactionInProgressException
// for a concurrent call with its token) is kept in memory only; recently
// completed tokens are cached in memory too.

const (
	nsToken       = 't'
	nsTokenExpiry = 'q'

	tokenRecordVersion = 1
	tokenRecordHeader  = 1 + 8 + 32
	// tokenSweepBatch bounds the expiry index entries one sweep handles.
	tokenSweepBatch = 1000
)

func tokenKey(tok string) []byte { return append([]byte{nsToken}, tok...) }

func tokenExpiryKey(ms int64, tok string) []byte {
	return append(binary.BigEndian.AppendUint64([]byte{nsTokenExpiry}, uint64(ms)), tok...)
}

// tokenRecord is the durable record of a completed tokened transaction.
type tokenRecord struct {
	hash    [32]byte
	expires time.Time // millisecond precision
	replay  *TransactWriteItemsOutput
}

func encodeTokenRecord(r *tokenRecord) []byte {
	v := make([]byte, 0, tokenRecordHeader)
	v = append(v, tokenRecordVersion)
	v = binary.BigEndian.AppendUint64(v, uint64(r.expires.UnixMilli()))
	v = append(v, r.hash[:]...)
	if r.replay != nil && len(r.replay.ConsumedCapacity) > 0 {
		j, err := json.Marshal(r.replay)
		if err != nil {
			panic(fmt.Sprintf("ddb: encode token record: %v", err)) // plain structs always marshal
		}
		v = append(v, j...)
	}
	return v
}

func decodeTokenRecord(v []byte) (*tokenRecord, error) {
	if len(v) < tokenRecordHeader || v[0] != tokenRecordVersion {
		return nil, fmt.Errorf("ddb: corrupt token record (%d bytes)", len(v))
	}
	r := &tokenRecord{expires: time.UnixMilli(int64(binary.BigEndian.Uint64(v[1:9]))), replay: &TransactWriteItemsOutput{}}
	copy(r.hash[:], v[9:tokenRecordHeader])
	if rest := v[tokenRecordHeader:]; len(rest) > 0 {
		if err := json.Unmarshal(rest, r.replay); err != nil {
			return nil, fmt.Errorf("ddb: corrupt token record: %w", err)
		}
	}
	return r, nil
}

// tokenExpiry is when a token used by a transaction committing at now
// stops being idempotent, at the precision of the durable record.
func tokenExpiry(now time.Time) time.Time {
	return time.UnixMilli(now.Add(tokenWindow).UnixMilli())
}

// stageToken adds the token record of a committing transaction to b.
func stageToken(b *wbatch, tok string, r *tokenRecord) {
	b.Set(tokenKey(tok), encodeTokenRecord(r), nil)
	b.Set(tokenExpiryKey(r.expires.UnixMilli(), tok), nil, nil)
}

// loadToken reads the durable record of tok; nil when there is none.
func (s *Store) loadToken(tok string) (r *tokenRecord, err error) {
	_, err = readValue(s.db, tokenKey(tok), func(v []byte) error {
		r, err = decodeTokenRecord(v)
		return err
	})
	return r, err
}

// tokenTable tracks the ClientRequestTokens of write transactions in
// memory: those still running, and a cache of the completed ones (whose
// durable records are the reference). It is split in shards by token, each
// with its own lock, so that transactions with different tokens do not
// wait for each other's lookups. The zero value is ready to use.
type tokenTable struct {
	shards [tokenShards]tokenShard
}

// tokenShards is the number of shards of a tokenTable.
const tokenShards = 16

// tokenShard holds the tokens whose hash falls in it. Its lock is held
// across a token's durable lookup and the sweeper's deletion of its
// record, so that a token is never claimed between the two.
type tokenShard struct {
	mu        sync.Mutex
	tokens    map[string]*tokenEntry
	lastSweep time.Time
}

// shardIndex returns the index of tok's shard (FNV-1a of the token).
func shardIndex(tok string) int {
	h := uint32(2166136261)
	for i := 0; i < len(tok); i++ {
		h = (h ^ uint32(tok[i])) * 16777619
	}
	return int(h % tokenShards)
}

func (tt *tokenTable) shard(tok string) *tokenShard { return &tt.shards[shardIndex(tok)] }

type tokenEntry struct {
	hash    [32]byte
	done    bool      // false while the first call runs
	expires time.Time // when done: 10 minutes after it committed
	replay  *TransactWriteItemsOutput
}

// live reports whether e still holds its token at now.
func (e *tokenEntry) live(now time.Time) bool { return !e.done || now.Before(e.expires) }

// begin claims tok for a new transaction, or returns the answer of the
// completed transaction that used it (prev), or an error when it is in use
// by another request or was used with other parameters. It consults memory
// first, then the durable record; an expired record is deleted.
func (tt *tokenTable) begin(s *Store, tok string, hash [32]byte, now time.Time) (prev *TransactWriteItemsOutput, err *Error) {
	return tt.shard(tok).begin(s, tok, hash, now)
}

func (tt *tokenShard) begin(s *Store, tok string, hash [32]byte, now time.Time) (prev *TransactWriteItemsOutput, err *Error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.tokens == nil {
		tt.tokens = map[string]*tokenEntry{}
	}
	if now.Sub(tt.lastSweep) >= time.Minute {
		tt.lastSweep = now
		for k, e := range tt.tokens {
			if !e.live(now) {
				delete(tt.tokens, k)
			}
		}
	}
	e := tt.tokens[tok]
	if e == nil || !e.live(now) {
		r, lerr := s.loadToken(tok)
		if lerr != nil {
			return nil, internal(lerr)
		}
		switch {
		case r == nil:
			e = nil
		case now.Before(r.expires):
			e = &tokenEntry{hash: r.hash, done: true, expires: r.expires, replay: r.replay}
			tt.tokens[tok] = e
		default:
			b := s.db.NewBatch()
			b.Delete(tokenKey(tok), nil)
			b.Delete(tokenExpiryKey(r.expires.UnixMilli(), tok), nil)
			derr := b.Commit(pebble.NoSync)
			b.Close()
			if derr != nil {
				return nil, internal(derr)
			}
			e = nil
		}
	}
	if e != nil {
		if e.hash != hash {
			return nil, &Error{Type: "IdempotentParameterMismatchException", Message: "The request uses the same client token as a previous, but non-identical request."}
		}
		if !e.done {
			return nil, &Error{Type: "TransactionInProgressException", Message: "The transaction with the given request token is already in progress."}
		}
		return e.replay, nil
	}
	tt.tokens[tok] = &tokenEntry{hash: hash}
	return nil, nil
}

// finish records the outcome of the transaction that claimed tok: a
// success (whose durable record was committed with the transaction) is
// cached until expires; after a failure the token is free again.
func (tt *tokenTable) finish(tok string, ok bool, replay *TransactWriteItemsOutput, expires time.Time) {
	tt.shard(tok).finish(tok, ok, replay, expires)
}

func (tt *tokenShard) finish(tok string, ok bool, replay *TransactWriteItemsOutput, expires time.Time) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	e := tt.tokens[tok]
	if e == nil {
		return
	}
	if !ok {
		delete(tt.tokens, tok)
		return
	}
	e.done, e.expires, e.replay = true, expires, replay
	if e.replay == nil {
		e.replay = &TransactWriteItemsOutput{}
	}
}

// sweepTokens deletes the durable records of tokens expired at now, at
// most tokenSweepBatch of them, and returns how many it deleted.
func (s *Store) sweepTokens(ctx context.Context, now time.Time) (int, error) {
	var expired []expiredToken
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsTokenExpiry}, UpperBound: tokenExpiryKey(now.UnixMilli()+1, "")})
	if err != nil {
		return 0, err
	}
	for it.First(); it.Valid() && len(expired) < tokenSweepBatch; it.Next() {
		k := it.Key()
		if len(k) < 9 {
			continue
		}
		expired = append(expired, expiredToken{int64(binary.BigEndian.Uint64(k[1:9])), string(k[9:])})
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	if len(expired) == 0 || ctx.Err() != nil {
		return 0, ctx.Err()
	}
	// One batch per shard, committed under the shard's lock.
	var byShard [tokenShards][]expiredToken
	for _, x := range expired {
		i := shardIndex(x.tok)
		byShard[i] = append(byShard[i], x)
	}
	deleted := 0
	for i := range byShard {
		if len(byShard[i]) == 0 {
			continue
		}
		n, err := s.sweepShard(&s.txTokens.shards[i], byShard[i], now)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// expiredToken is an entry of the token expiry index.
type expiredToken struct {
	ms  int64
	tok string
}

// sweepShard deletes the expired records of the tokens of one shard (and
// their expiry index entries) in one batch, under the shard's lock.
func (s *Store) sweepShard(tt *tokenShard, expired []expiredToken, now time.Time) (int, error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	deleted := 0
	for _, x := range expired {
		b.Delete(tokenExpiryKey(x.ms, x.tok), nil)
		if e := tt.tokens[x.tok]; e != nil {
			if e.live(now) {
				continue // claimed again, or cached with a newer record
			}
			delete(tt.tokens, x.tok)
		}
		r, err := s.loadToken(x.tok)
		if err != nil {
			return deleted, err
		}
		if r != nil && !now.Before(r.expires) {
			b.Delete(tokenKey(x.tok), nil)
			deleted++
		}
	}
	return deleted, b.Commit(pebble.NoSync)
}
