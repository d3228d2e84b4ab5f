package ddb

// Point-in-time recovery (UpdateContinuousBackups,
// DescribeContinuousBackups, RestoreTableToPointInTime).
//
// While PITR is enabled every item change of the table is in the change
// log (changelog.go) with its full old and new images. The table as of time
// T is rebuilt from one Pebble snapshot: its current items, with every
// change committed after T undone — for each key changed after T, the old
// image of its first such change is the item it had at T (none: it had no
// item). The restore then proceeds as one from a backup (backup.go).
//
// The recovery window of a table starts when PITR was last enabled and
// spans at most min(RecoveryPeriodInDays, Options.PITRRetention); the log
// must keep the records of that window (see pitrLogRetention).

import (
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/quarrydb/quarry/ddb/attr"
)

const defaultPITRDays = 35

// pitrRetention is the longest PITR window of any table.
func (s *Store) pitrRetention() time.Duration { return s.opts.PITRRetention }

// pitrDays returns the table's RecoveryPeriodInDays.
func pitrDays(m *tableMeta) int {
	if m.PITRDays > 0 {
		return m.PITRDays
	}
	return defaultPITRDays
}

// pitrWindow is how far back a table with PITR enabled can be restored.
func (s *Store) pitrWindow(m *tableMeta) time.Duration {
	return min(time.Duration(pitrDays(m))*24*time.Hour, s.pitrRetention())
}

// pitrLogRetention is how long the change log of t must keep records for
// point-in-time recovery: 0 when PITR is disabled.
func (s *Store) pitrLogRetention(t *table) time.Duration {
	if !t.meta.PITR {
		return 0
	}
	return s.pitrWindow(t.meta)
}

// pitrRange returns the earliest and latest restorable times (Unix ms) of a
// table with PITR enabled, at now.
func (s *Store) pitrRange(m *tableMeta, now time.Time) (earliest, latest int64) {
	latest = now.UnixMilli()
	earliest = max(m.PITRSinceMillis, now.Add(-s.pitrWindow(m)).UnixMilli())
	return min(earliest, latest), latest
}

// PointInTimeRecoverySpecification enables or disables PITR.
type PointInTimeRecoverySpecification struct {
	PointInTimeRecoveryEnabled *bool `json:"PointInTimeRecoveryEnabled"`
	RecoveryPeriodInDays       *int  `json:"RecoveryPeriodInDays"`
}

// UpdateContinuousBackupsInput is the request of UpdateContinuousBackups.
type UpdateContinuousBackupsInput struct {
	TableName                        *string                           `json:"TableName"`
	PointInTimeRecoverySpecification *PointInTimeRecoverySpecification `json:"PointInTimeRecoverySpecification"`
}

// PointInTimeRecoveryDescription is a table's PITR state.
type PointInTimeRecoveryDescription struct {
	PointInTimeRecoveryStatus  string   `json:"PointInTimeRecoveryStatus"`
	EarliestRestorableDateTime *float64 `json:"EarliestRestorableDateTime,omitempty"`
	LatestRestorableDateTime   *float64 `json:"LatestRestorableDateTime,omitempty"`
	RecoveryPeriodInDays       *int     `json:"RecoveryPeriodInDays,omitempty"`
}

// ContinuousBackupsDescription is a table's continuous-backup state.
type ContinuousBackupsDescription struct {
	ContinuousBackupsStatus        string                          `json:"ContinuousBackupsStatus"`
	PointInTimeRecoveryDescription *PointInTimeRecoveryDescription `json:"PointInTimeRecoveryDescription"`
}

// ContinuousBackupsOutput is the response of UpdateContinuousBackups and
// DescribeContinuousBackups.
type ContinuousBackupsOutput struct {
	ContinuousBackupsDescription *ContinuousBackupsDescription `json:"ContinuousBackupsDescription"`
}

func (s *Store) continuousBackups(m *tableMeta) *ContinuousBackupsOutput {
	p := &PointInTimeRecoveryDescription{PointInTimeRecoveryStatus: "DISABLED"}
	if m.PITR {
		e, l := s.pitrRange(m, s.opts.Now())
		es, ls, days := epochSeconds(e), epochSeconds(l), pitrDays(m)
		p = &PointInTimeRecoveryDescription{
			PointInTimeRecoveryStatus:  "ENABLED",
			EarliestRestorableDateTime: &es,
			LatestRestorableDateTime:   &ls,
			RecoveryPeriodInDays:       &days,
		}
	}
	return &ContinuousBackupsOutput{ContinuousBackupsDescription: &ContinuousBackupsDescription{
		ContinuousBackupsStatus:        "ENABLED",
		PointInTimeRecoveryDescription: p,
	}}
}

// UpdateContinuousBackups enables or disables point-in-time recovery of a
// table, or changes its recovery period. Re-enabling starts a new window.
func (s *Store) UpdateContinuousBackups(in *UpdateContinuousBackupsInput) (*ContinuousBackupsOutput, error) {
	var c constraintErrors
	checkTableRef(&c, "tableName", in.TableName)
	spec := in.PointInTimeRecoverySpecification
	if spec == nil {
		c.add("Value null at 'pointInTimeRecoverySpecification' failed to satisfy constraint: Member must not be null")
	} else {
		if spec.PointInTimeRecoveryEnabled == nil {
			c.add("Value null at 'pointInTimeRecoverySpecification.pointInTimeRecoveryEnabled' failed to satisfy constraint: Member must not be null")
		}
		if d := spec.RecoveryPeriodInDays; d != nil && *d < 1 {
			c.add("Value '%d' at 'pointInTimeRecoverySpecification.recoveryPeriodInDays' failed to satisfy constraint: Member must have value greater than or equal to 1", *d)
		} else if d != nil && *d > 35 {
			c.add("Value '%d' at 'pointInTimeRecoverySpecification.recoveryPeriodInDays' failed to satisfy constraint: Member must have value less than or equal to 35", *d)
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	enable := *spec.PointInTimeRecoveryEnabled
	if !enable && spec.RecoveryPeriodInDays != nil {
		return nil, validationf("RecoveryPeriodInDays can only be specified when PointInTimeRecoveryEnabled is true")
	}
	name := tableNameParam(*in.TableName)
	// As UpdateTable: writes in flight finish under the old metadata (so
	// none after the enabling instant goes unlogged), later ones see the new.
	old, unlock, ok := s.lockDDL(name)
	if !ok {
		return nil, tableNotFoundNamed(name)
	}
	defer unlock()
	m := *old.meta
	switch {
	case enable && !m.PITR:
		m.PITR = true
		m.PITRSinceMillis = s.opts.Now().UnixMilli()
		m.PITRDays = defaultPITRDays
		if spec.RecoveryPeriodInDays != nil {
			m.PITRDays = *spec.RecoveryPeriodInDays
		}
	case enable:
		if spec.RecoveryPeriodInDays != nil {
			m.PITRDays = *spec.RecoveryPeriodInDays
		}
	default:
		m.PITR = false
		m.PITRSinceMillis = 0
		m.PITRDays = 0
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := s.putMeta(b, &m); err != nil {
		return nil, internal(err)
	}
	if err := b.Commit(s.wo); err != nil {
		return nil, internal(err)
	}
	s.tables[name] = newTable(&m)
	return s.continuousBackups(&m), nil
}

// ContinuousBackupsInput is the request of DescribeContinuousBackups.
type ContinuousBackupsInput struct {
	TableName *string `json:"TableName"`
}

// DescribeContinuousBackups reports a table's point-in-time recovery state
// and restorable window.
func (s *Store) DescribeContinuousBackups(in *ContinuousBackupsInput) (*ContinuousBackupsOutput, error) {
	var c constraintErrors
	checkTableRef(&c, "tableName", in.TableName)
	if err := c.err(); err != nil {
		return nil, err
	}
	name := tableNameParam(*in.TableName)
	t, terr := s.table(name)
	if terr != nil {
		return nil, tableNotFoundNamed(name)
	}
	return s.continuousBackups(t.meta), nil
}

// RestoreTableToPointInTimeInput is the request of RestoreTableToPointInTime.
type RestoreTableToPointInTimeInput struct {
	SourceTableName         *string  `json:"SourceTableName"`
	SourceTableArn          *string  `json:"SourceTableArn"`
	TargetTableName         *string  `json:"TargetTableName"`
	RestoreDateTime         *float64 `json:"RestoreDateTime"`
	UseLatestRestorableTime *bool    `json:"UseLatestRestorableTime"`
	restoreOverrides
}

// RestoreTableToPointInTime creates a new table holding a table's items as
// they were at RestoreDateTime (or at the latest restorable time), with the
// source's current key schema, indexes and capacity. The table is complete
// when it returns.
func (s *Store) RestoreTableToPointInTime(in *RestoreTableToPointInTimeInput) (*RestoreTableOutput, error) {
	var c constraintErrors
	checkTableName(&c, "targetTableName", in.TargetTableName)
	if in.SourceTableName != nil {
		checkName(&c, "sourceTableName", *in.SourceTableName)
	}
	checkOverrides(&c, &in.restoreOverrides)
	if err := c.err(); err != nil {
		return nil, err
	}
	var source string
	switch {
	case in.SourceTableName != nil && in.SourceTableArn != nil:
		return nil, validationf("Only one of SourceTableName or SourceTableArn can be specified")
	case in.SourceTableName != nil:
		source = *in.SourceTableName
	case in.SourceTableArn != nil:
		source = tableNameParam(*in.SourceTableArn)
	default:
		return nil, validationf("Either SourceTableName or SourceTableArn must be specified")
	}
	latest := in.UseLatestRestorableTime != nil && *in.UseLatestRestorableTime
	if latest && in.RestoreDateTime != nil {
		return nil, validationf("Only one of RestoreDateTime or UseLatestRestorableTime can be specified")
	}
	if !latest && in.RestoreDateTime == nil {
		return nil, validationf("Either RestoreDateTime or UseLatestRestorableTime must be specified")
	}
	if in.RestoreDateTime != nil && (math.IsNaN(*in.RestoreDateTime) || math.IsInf(*in.RestoreDateTime, 0)) {
		return nil, invalidRestoreTime()
	}

	t, unlock, terr := s.writeTable(source)
	if terr != nil {
		return nil, &Error{Type: "SourceTableNotFoundException", Message: "Source table not found: " + source}
	}
	if !t.meta.PITR {
		unlock()
		return nil, &Error{Type: "PointInTimeRecoveryUnavailableException", Message: "Point in time recovery is not enabled for table '" + source + "'"}
	}
	earliest, at := s.pitrRange(t.meta, s.opts.Now())
	if !latest {
		newest := at
		at = epochMillis(*in.RestoreDateTime)
		if at < earliest || at > newest {
			unlock()
			return nil, invalidRestoreTime()
		}
	}
	target := *in.TargetTableName
	if _, exists := s.tableExists(target); exists {
		unlock()
		return nil, tableAlreadyExists(target)
	}
	// Under the ddl read lock the table cannot be deleted or have PITR
	// turned off before the snapshot, which then holds its items and log.
	snap := s.db.NewSnapshot()
	unlock()
	defer snap.Close()

	undo, err := s.changesAfter(snap, t, at)
	if err != nil {
		return nil, internal(err)
	}
	m, verr := s.restoredMeta(t.meta, target, &in.restoreOverrides)
	if verr != nil {
		return nil, verr
	}
	nt, rerr := s.restoreTable("RestoreTableToPointInTime", m, func(emit func(suffix, raw []byte) error) error {
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: t.prefix, UpperBound: prefixSuccessor(t.prefix)})
		if err != nil {
			return err
		}
		defer it.Close()
		for it.First(); it.Valid(); it.Next() {
			suffix, raw := it.Key()[len(t.prefix):], it.Value()
			if old, changed := undo[string(it.Key())]; changed {
				delete(undo, string(it.Key()))
				if old == nil {
					continue // created after the restore time
				}
				suffix, raw = encodeRestoreItem(t, old)
			}
			if err := emit(suffix, raw); err != nil {
				return err
			}
		}
		if err := it.Error(); err != nil {
			return err
		}
		// What remains was deleted after the restore time.
		for _, old := range undo {
			if old != nil {
				if err := emit(encodeRestoreItem(t, old)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if rerr != nil {
		return nil, rerr
	}
	return s.restoredOutput(nt, &RestoreSummary{SourceTableArn: s.arn(source), RestoreDateTime: epochSeconds(at)}), nil
}

func invalidRestoreTime() *Error {
	return &Error{Type: "InvalidRestoreTimeException", Message: "RestoreDateTime must be between EarliestRestorableDateTime and LatestRestorableDateTime"}
}

// changesAfter returns, for every item of t changed after time at (Unix ms)
// according to the log in snap, its storage key mapped to the item it had
// at that time (nil: none). A record that cannot be decoded is logged,
// counted in Metrics.CorruptItems and skipped, so that a damaged record
// does not make the whole table unrestorable: one before the time changes
// nothing; one after it loses that change's old image, so its item is
// restored from its next record's old image, or as it is now when it has
// no later record.
func (s *Store) changesAfter(snap *pebble.Snapshot, t *table, at int64) (map[string]attr.Item, error) {
	p := logPrefix(t.meta.ID)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixSuccessor(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	undo := map[string]attr.Item{}
	for it.First(); it.Valid(); it.Next() {
		var head struct {
			TimeMillis int64 `json:"t"`
		}
		if err := json.Unmarshal(it.Value(), &head); err != nil {
			s.skipCorruptLogRecord(t, it.Key(), err)
			continue
		}
		if head.TimeMillis <= at {
			continue // skip decoding the images of records before the time
		}
		var r changeRecord
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			s.skipCorruptLogRecord(t, it.Key(), err)
			continue
		}
		if _, ok := r.Keys[t.hash.Name]; !ok {
			s.skipCorruptLogRecord(t, it.Key(), errors.New("the record has no key"))
			continue
		}
		// Records are in commit order per key (writes of one key are
		// serialized), so the first one after the time has the old image.
		k := string(t.itemKey(r.Keys))
		if _, seen := undo[k]; !seen {
			undo[k] = r.Old
		}
	}
	return undo, it.Error()
}
