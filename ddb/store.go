// Package ddb is quarry's embedded DynamoDB-compatible store. It keeps
// tables, items and secondary indexes in a Pebble database and speaks the
// DynamoDB wire protocol (API version 2012-08-10, JSON 1.0 over HTTP), so the
// AWS CLI, boto3 and every AWS SDK work against it unchanged.
//
// Open a store with Open, serve it with Store.Handler, or talk to it
// in-process through an aws-sdk-go-v2 client built by NewClient. Tables'
// streams are served by the same endpoint (in-process: NewStreamsClient);
// package ddb/consumer reads one with at-least-once delivery.
package ddb

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/quarrydb/quarry/ddb/sigv4"
)

// Options configure a Store. The zero value is valid.
type Options struct {
	// Region and AccountID appear in ARNs. Defaults: us-east-1, 000000000000.
	Region    string
	AccountID string
	// Logger receives the store's logs. Default: slog.Default().
	Logger *slog.Logger
	// Now returns the current time. Default: time.Now.
	Now func() time.Time
	// FS is the file system; vfs.NewMem() keeps the store in memory.
	// Default: the operating system's.
	FS vfs.FS
	// TTLInterval is how often expired items are swept. Default 10s;
	// negative disables the sweeper (SweepExpired can still be called).
	TTLInterval time.Duration
	// Credentials, when set, maps access key ids to secret keys: requests
	// over HTTP must then carry a valid AWS Signature V4 made with one of
	// them. When nil any credentials are accepted, as local emulators do.
	// In-process clients (NewClient) are trusted either way.
	Credentials map[string]string
	// NoSync skips fsync on commit: faster, but acknowledged writes may be
	// lost on a machine crash (not on a process crash). Default false.
	NoSync bool
	// PITRRetention is the longest point-in-time recovery window of any
	// table (a table's RecoveryPeriodInDays may shorten it). Default: 35 days.
	PITRRetention time.Duration
	// CacheBytes is the size of the block cache that keeps recently read
	// data in memory. Default 64 MiB.
	CacheBytes int64
	// SyncInterval is the shortest time between two fsyncs of the write-ahead
	// log: commits that arrive meanwhile wait and share the next fsync,
	// which saves CPU and I/O under concurrent writes for at most that much
	// latency. 0: every commit group syncs at once.
	SyncInterval time.Duration
}

// EnsureDefaults fills in zero fields with their defaults.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.TTLInterval == 0 {
		o.TTLInterval = 10 * time.Second
	}
	if o.PITRRetention <= 0 {
		o.PITRRetention = 35 * 24 * time.Hour
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 64 << 20
	}
	return o
}

// Store is an open embedded DynamoDB store. It is safe for concurrent use.
type Store struct {
	opts *Options
	db   *pebble.DB
	wo   *pebble.WriteOptions
	// release forgets the directory in openDirs (nil: not on disk).
	release func()

	mu     sync.RWMutex // guards tables, retired and nextID
	tables map[string]*table
	// retired are deleted tables kept for their streams, by id (deletedtables.go).
	retired map[uint64]*table
	nextID  uint64

	seq     seqTracker
	wake    streamWaker     // in-process stream readers (streamwake.go)
	auth    *sigv4.Verifier // nil: no signature checks
	streams streamsState    // DynamoDB Streams (streams.go)

	// periodic tasks run by the background loop after each TTL sweep.
	periodic []func(ctx context.Context, now time.Time) error
	bgStop   context.CancelFunc
	bgDone   chan struct{}
	seed     maphash.Seed
	stripes  [1024]sync.Mutex

	// txTokens tracks TransactWriteItems client request tokens in memory;
	// completed ones are also durable (clienttokens.go).
	txTokens tokenTable

	// backfills are the running online index backfills (backfill.go).
	backfills backfills

	// stats counts the requests of each operation (metrics.go).
	stats opStats
}

// pebbleOptions tunes Pebble for DynamoDB's access pattern: point reads by
// full key (bloom filters spare a read of every level that lacks the key),
// short range scans, and small synchronous writes from many clients.
func pebbleOptions(o *Options, cache *pebble.Cache) *pebble.Options {
	po := &pebble.Options{
		FS:                          o.FS,
		Logger:                      quietLogger{o.Logger},
		Cache:                       cache,
		MemTableSize:                32 << 20,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       24,
		MaxConcurrentCompactions:    func() int { return 2 },
		WALMinSyncInterval:          func() time.Duration { return o.SyncInterval },
	}
	po.Levels = make([]pebble.LevelOptions, 7)
	for i := range po.Levels {
		l := &po.Levels[i]
		l.FilterPolicy = bloom.FilterPolicy(10)
		l.FilterType = pebble.TableFilter
	}
	po.EnsureDefaults()
	return po
}

// ErrLocked is returned by Open when another process holds the data directory.
var ErrLocked = errors.New("ddb: data directory is in use by another process")

// Open opens (creating if needed) the store in dir. It fails with
// ErrLocked when another store, of this process or another, has dir open.
func Open(dir string, opts *Options) (_ *Store, err error) {
	o := *opts.EnsureDefaults()
	var release func()
	if o.FS == vfs.Default {
		if release, err = claimDir(dir); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				release()
			}
		}()
	}
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(dir, pebbleOptions(&o, cache))
	if err != nil {
		if isLockErr(err) {
			return nil, fmt.Errorf("%w: %s: %w", ErrLocked, dir, err)
		}
		return nil, fmt.Errorf("ddb: open %s: %w", dir, err)
	}
	s := &Store{opts: &o, db: db, wo: pebble.Sync, tables: map[string]*table{}, seed: maphash.MakeSeed(), release: release}
	s.backfills.init()
	if o.NoSync {
		s.wo = pebble.NoSync
	}
	if o.Credentials != nil {
		s.auth = sigv4.New(o.Credentials, sigv4.WithClock(o.Now))
	}
	err = s.load()
	if err == nil {
		err = s.loadRetired()
	}
	if err == nil {
		err = s.loadSeq()
	}
	if err == nil {
		s.streams.key, err = s.loadSecret(iteratorKeyName, 32)
	}
	if err == nil {
		err = s.recoverBackups()
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	s.periodic = append(s.periodic, func(_ context.Context, now time.Time) error { return s.trimStreams(now) })
	s.periodic = append(s.periodic, func(ctx context.Context, now time.Time) error {
		_, err := s.sweepTokens(ctx, now)
		return err
	})
	ctx, cancel := context.WithCancel(context.Background())
	s.bgStop, s.bgDone = cancel, make(chan struct{})
	go s.runBackground(ctx)
	s.resumeBackfills()
	return s, nil
}

// isLockErr reports whether err is pebble's failure to take the lock
// file of a directory another process holds: fcntl(F_SETLK) refused with
// EAGAIN (EWOULDBLOCK), which pebble returns unwrapped. Opening the lock
// file itself (a *PathError, e.g. EACCES) is another failure.
func isLockErr(err error) bool {
	var pathErr *fs.PathError
	return errors.Is(err, syscall.EWOULDBLOCK) && !errors.As(err, &pathErr)
}

// openDirs are the directories of the stores this process has open, by
// absolute path: the lock file keeps other processes out, but a second
// open in this process would get an untyped error from pebble (or, by
// another spelling of the path, succeed).
var openDirs = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// claimDir records dir as open in this process, or fails with ErrLocked
// when it is already; release forgets it.
func claimDir(dir string) (release func(), err error) {
	key, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("ddb: open %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(key); err == nil {
		key = real
	}
	openDirs.Lock()
	defer openDirs.Unlock()
	if openDirs.m[key] {
		return nil, fmt.Errorf("%w: %s: open in this process", ErrLocked, dir)
	}
	openDirs.m[key] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			openDirs.Lock()
			defer openDirs.Unlock()
			delete(openDirs.m, key)
		})
	}, nil
}

// Close closes the store. Requests in flight fail.
func (s *Store) Close() error {
	s.backfills.stop() // an interrupted backfill resumes on the next Open
	s.bgStop()
	<-s.bgDone
	err := s.db.Close()
	if s.release != nil {
		s.release() // after the lock file is released
	}
	return err
}

func (s *Store) load() error {
	if v, closer, err := s.db.Get([]byte{nsSeq}); err == nil {
		s.nextID = binary.BigEndian.Uint64(v)
		closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("ddb: read sequence: %w", err)
	}
	return s.readTables(nsMeta, func(t *table) { s.tables[t.meta.Name] = t })
}

// readTables calls fn with each table whose metadata is stored in the
// namespace ns (live tables, or deleted ones kept for their streams).
func (s *Store) readTables(ns byte, fn func(*table)) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{ns}, UpperBound: []byte{ns + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		var m tableMeta
		if err := json.Unmarshal(it.Value(), &m); err != nil {
			return fmt.Errorf("ddb: corrupt table metadata %q: %w", it.Key()[1:], err)
		}
		fn(newTable(&m))
	}
	return it.Error()
}

// readValue calls fn with the value stored under key in r (valid only
// during the call) and reports whether there was one.
func readValue(r pebble.Reader, key []byte, fn func(v []byte) error) (bool, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	return true, fn(v)
}

// allocIDLocked reserves a new table or index id. The caller MUST hold s.mu
// and write the returned sequence record in the same batch as its use.
func (s *Store) allocIDLocked(b *pebble.Batch) uint64 {
	s.nextID++
	b.Set([]byte{nsSeq}, binary.BigEndian.AppendUint64(nil, s.nextID), nil)
	return s.nextID
}

func metaKey(name string) []byte { return append([]byte{nsMeta}, name...) }

func (s *Store) putMeta(b *pebble.Batch, m *tableMeta) error {
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return b.Set(metaKey(m.Name), v, nil)
}

// table returns the open table called name.
func (s *Store) table(name string) (*table, *Error) {
	s.mu.RLock()
	t := s.tables[name]
	s.mu.RUnlock()
	if t == nil {
		return nil, tableNotFound()
	}
	return t, nil
}

func (s *Store) tableNames() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.tables))
	for n := range s.tables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lockKeys locks the item stripes of the given storage keys in a fixed order
// (so concurrent multi-item writes cannot deadlock) and returns the unlock.
func (s *Store) lockKeys(keys ...[]byte) func() {
	if len(keys) == 1 {
		m := &s.stripes[maphash.Bytes(s.seed, keys[0])%uint64(len(s.stripes))]
		m.Lock()
		return m.Unlock
	}
	idx := make([]int, 0, len(keys))
	seen := map[int]bool{}
	for _, k := range keys {
		i := int(maphash.Bytes(s.seed, k) % uint64(len(s.stripes)))
		if !seen[i] {
			seen[i] = true
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	for _, i := range idx {
		s.stripes[i].Lock()
	}
	return func() {
		for j := len(idx) - 1; j >= 0; j-- {
			s.stripes[idx[j]].Unlock()
		}
	}
}

func (s *Store) arn(name string) string {
	return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", s.opts.Region, s.opts.AccountID, name)
}

// quietLogger routes Pebble's informational logs to debug level.
type quietLogger struct{ l *slog.Logger }

func (q quietLogger) Infof(format string, args ...any) {
	q.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (q quietLogger) Errorf(format string, args ...any) {
	q.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (q quietLogger) Fatalf(format string, args ...any) {
	q.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	panic(fmt.Sprintf(format, args...))
}
