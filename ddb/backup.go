package ddb

// On-demand backups (CreateBackup, DescribeBackup, ListBackups,
// DeleteBackup, RestoreTableFromBackup) and the restore machinery that
// point-in-time recovery (pitr.go) shares.
//
// A backup is a consistent copy of a table's items, taken from one Pebble
// snapshot, kept in the same database under the 'k' namespace:
//
//	kc<backup arn>               → backupRecord (JSON): the catalogue
//	kd<backup id><item suffix>   → item, as stored under d<table id><item suffix>
//	kp<table id>                 → restoreMarker (JSON): a restore under way
//
// Index entries are not copied; a restore rebuilds them. A backup's
// catalogue record is written first with status CREATING and rewritten as
// AVAILABLE after its last item; a restore writes the new table's items and
// index entries under fresh ids, then publishes the table metadata last, in
// the batch that drops its marker. Open discards whatever a crash left
// half-done (CREATING backups, restore markers), so no partial backup or
// table ever becomes visible.

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble"

	"github.com/quarrydb/quarry/ddb/attr"
)

const (
	nsBackup = 'k'
	// Second byte of a backup-namespace key.
	bkCatalog = 'c'
	bkData    = 'd'
	bkRestore = 'p'

	// restoreBatchBytes is the size at which a backup or restore batch is
	// committed and a new one started.
	restoreBatchBytes = 4 << 20
)

func backupCatalogKey(arn string) []byte { return append([]byte{nsBackup, bkCatalog}, arn...) }

func backupDataPrefix(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{nsBackup, bkData}, id)
}

func restoreMarkerKey(tableID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{nsBackup, bkRestore}, tableID)
}

// backupRecord is the catalogue entry of one backup.
type backupRecord struct {
	ID            uint64 `json:"id"`
	Arn           string `json:"arn"`
	Name          string `json:"name"`
	CreatedMillis int64  `json:"created"`
	// Status is CREATING until the last item is copied, then AVAILABLE.
	Status    string `json:"status"`
	Type      string `json:"type"`
	SizeBytes int64  `json:"size"`
	ItemCount int64  `json:"items"`
	TableArn  string `json:"tableArn"`
	// Table is the source table's metadata when the backup was taken.
	Table tableMeta `json:"table"`
}

// restoreMarker records the ids of a table being restored, so that Open
// can delete its data if the restore never published the table.
type restoreMarker struct {
	Name     string   `json:"name"`
	TableID  uint64   `json:"tableId"`
	IndexIDs []uint64 `json:"indexIds"`
}

// recoverBackups discards backups whose copy a crash interrupted and the
// data of restores that never published their table.
func (s *Store) recoverBackups() error {
	b := s.db.NewBatch()
	defer b.Close()
	lo := []byte{nsBackup, bkCatalog}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixSuccessor(lo)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		var r backupRecord
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			it.Close()
			return fmt.Errorf("ddb: corrupt backup record %q: %w", it.Key()[2:], err)
		}
		if r.Status != "AVAILABLE" {
			p := backupDataPrefix(r.ID)
			b.DeleteRange(p, prefixSuccessor(p), nil)
			b.Delete(append([]byte(nil), it.Key()...), nil)
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	lo = []byte{nsBackup, bkRestore}
	it, err = s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixSuccessor(lo)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		var m restoreMarker
		if err := json.Unmarshal(it.Value(), &m); err != nil {
			it.Close()
			return fmt.Errorf("ddb: corrupt restore marker: %w", err)
		}
		s.opts.Logger.Warn("ddb: discarding interrupted restore", "table", m.Name)
		stageDropRestore(b, &m)
	}
	if err := it.Close(); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	return b.Commit(s.wo)
}

// stageDropRestore adds to b the deletion of a partial restore's data.
func stageDropRestore(b *pebble.Batch, m *restoreMarker) {
	p := idPrefix(nsData, m.TableID)
	b.DeleteRange(p, prefixSuccessor(p), nil)
	for _, id := range m.IndexIDs {
		p := idPrefix(nsIndex, id)
		b.DeleteRange(p, prefixSuccessor(p), nil)
	}
	b.Delete(restoreMarkerKey(m.TableID), nil)
}

// tableNameParam returns the table name of a TableName parameter that may
// also be a table ARN.
func tableNameParam(s string) string {
	if strings.HasPrefix(s, "arn:") {
		if _, rest, ok := strings.Cut(s, ":table/"); ok {
			name, _, _ := strings.Cut(rest, "/")
			return name
		}
	}
	return s
}

// checkTableRef validates a TableName parameter that accepts a name or an ARN.
func checkTableRef(c *constraintErrors, field string, v *string) { checkLength(c, field, v, 1, 1024) }

func checkBackupArn(c *constraintErrors, v *string) { checkArnField(c, "backupArn", v) }

// checkArnField validates a backup ARN parameter (37 to 1024 characters).
func checkArnField(c *constraintErrors, field string, v *string) { checkLength(c, field, v, 37, 1024) }

// checkLength validates a required string parameter of min to max bytes.
func checkLength(c *constraintErrors, field string, v *string, min, max int) {
	if v == nil {
		c.add("Value null at '%s' failed to satisfy constraint: Member must not be null", field)
		return
	}
	if len(*v) < min {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length greater than or equal to %d", *v, field, min)
	}
	if len(*v) > max {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", *v, field, max)
	}
}

func tableNotFoundNamed(name string) *Error {
	return &Error{Type: "TableNotFoundException", Message: "Table not found: " + name}
}

func tableAlreadyExists(name string) *Error {
	return &Error{Type: "TableAlreadyExistsException", Message: "Table already exists: " + name}
}

func backupNotFound(arn string) *Error {
	return &Error{Type: "BackupNotFoundException", Message: "Backup not found: " + arn}
}

func backupInUse() *Error {
	return &Error{Type: "BackupInUseException", Message: "There is another ongoing conflicting backup control plane operation on the table. The backup is either being created, deleted or restored to a table."}
}

// CreateBackupInput is the request of CreateBackup.
type CreateBackupInput struct {
	TableName  *string `json:"TableName"`
	BackupName *string `json:"BackupName"`
}

// BackupDetails describes a backup.
type BackupDetails struct {
	BackupArn              string  `json:"BackupArn"`
	BackupName             string  `json:"BackupName"`
	BackupSizeBytes        int64   `json:"BackupSizeBytes"`
	BackupStatus           string  `json:"BackupStatus"`
	BackupType             string  `json:"BackupType"`
	BackupCreationDateTime float64 `json:"BackupCreationDateTime"`
}

// CreateBackupOutput is the response of CreateBackup.
type CreateBackupOutput struct {
	BackupDetails *BackupDetails `json:"BackupDetails"`
}

func randomHex8() string {
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%08x", b[:])
}

// CreateBackup copies a table's items, as of one instant, into a new
// on-demand backup. The copy is complete (AVAILABLE) when it returns.
func (s *Store) CreateBackup(in *CreateBackupInput) (*CreateBackupOutput, error) {
	var c constraintErrors
	checkTableRef(&c, "tableName", in.TableName)
	if in.BackupName == nil {
		c.add("Value null at 'backupName' failed to satisfy constraint: Member must not be null")
	} else {
		checkName(&c, "backupName", *in.BackupName)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	name := tableNameParam(*in.TableName)
	t, unlock, terr := s.writeTable(name)
	if terr != nil {
		return nil, tableNotFoundNamed(name)
	}
	// Under the table's ddl read lock no DeleteTable can have dropped the
	// items yet; the snapshot then holds them however long the copy takes.
	snap := s.db.NewSnapshot()
	meta := *t.meta
	unlock()
	defer snap.Close()

	now := s.opts.Now()
	r := &backupRecord{
		Arn:           fmt.Sprintf("%s/backup/%014d-%s", s.arn(name), now.UnixMilli(), randomHex8()),
		Name:          *in.BackupName,
		CreatedMillis: now.UnixMilli(),
		Status:        "CREATING",
		Type:          "USER",
		TableArn:      s.arn(name),
		Table:         meta,
	}
	if err := s.startBackup(r); err != nil {
		return nil, err
	}
	if err := s.copyBackup(snap, t.prefix, r); err != nil {
		s.dropBackup(r)
		return nil, err
	}
	return &CreateBackupOutput{BackupDetails: r.details()}, nil
}

// startBackup allocates the backup's id and writes its CREATING record.
func (s *Store) startBackup(r *backupRecord) *Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	r.ID = s.allocIDLocked(b)
	if err := putBackupRecord(b, r); err != nil {
		return internal(err)
	}
	if err := b.Commit(s.wo); err != nil {
		return internal(err)
	}
	return nil
}

func putBackupRecord(b *pebble.Batch, r *backupRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Set(backupCatalogKey(r.Arn), v, nil)
}

// copyBackup copies the items under prefix in snap into backup r and marks
// it AVAILABLE.
func (s *Store) copyBackup(snap *pebble.Snapshot, prefix []byte, r *backupRecord) *Error {
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixSuccessor(prefix)})
	if err != nil {
		return internal(err)
	}
	defer it.Close()
	dp := backupDataPrefix(r.ID)
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	for it.First(); it.Valid(); it.Next() {
		k := append(append(make([]byte, 0, len(dp)+len(it.Key())-len(prefix)), dp...), it.Key()[len(prefix):]...)
		b.Set(k, it.Value(), nil)
		r.ItemCount++
		r.SizeBytes += int64(len(it.Value()))
		if b.Len() >= restoreBatchBytes {
			if err := b.Commit(pebble.NoSync); err != nil {
				return internal(err)
			}
			b.Close()
			b = s.db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return internal(err)
	}
	r.Status = "AVAILABLE"
	if err := putBackupRecord(b, r); err != nil {
		return internal(err)
	}
	if err := b.Commit(s.wo); err != nil {
		return internal(err)
	}
	return nil
}

// dropBackup deletes a backup's record and data (best effort).
func (s *Store) dropBackup(r *backupRecord) error {
	b := s.db.NewBatch()
	defer b.Close()
	p := backupDataPrefix(r.ID)
	b.DeleteRange(p, prefixSuccessor(p), nil)
	b.Delete(backupCatalogKey(r.Arn), nil)
	return b.Commit(s.wo)
}

// getBackup reads the catalogue record of arn from snap, or the live
// database when snap is nil.
func (s *Store) getBackup(snap *pebble.Snapshot, arn string) (*backupRecord, *Error) {
	var (
		v      []byte
		closer interface{ Close() error }
		err    error
	)
	if snap != nil {
		v, closer, err = snap.Get(backupCatalogKey(arn))
	} else {
		v, closer, err = s.db.Get(backupCatalogKey(arn))
	}
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, backupNotFound(arn)
	}
	if err != nil {
		return nil, internal(err)
	}
	defer closer.Close()
	var r backupRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, internal(err)
	}
	return &r, nil
}

func (r *backupRecord) details() *BackupDetails {
	return &BackupDetails{
		BackupArn:              r.Arn,
		BackupName:             r.Name,
		BackupSizeBytes:        r.SizeBytes,
		BackupStatus:           r.Status,
		BackupType:             r.Type,
		BackupCreationDateTime: epochSeconds(r.CreatedMillis),
	}
}

// BackupARNInput is the request of DescribeBackup and DeleteBackup.
type BackupARNInput struct {
	BackupArn *string `json:"BackupArn"`
}

// SourceTableDetails describes the table a backup was taken of.
type SourceTableDetails struct {
	TableName             string             `json:"TableName"`
	TableID               string             `json:"TableId"`
	TableArn              string             `json:"TableArn"`
	KeySchema             []KeySchemaElement `json:"KeySchema"`
	TableCreationDateTime float64            `json:"TableCreationDateTime"`
	ProvisionedThroughput throughputDesc     `json:"ProvisionedThroughput"`
	ItemCount             int64              `json:"ItemCount"`
	BillingMode           string             `json:"BillingMode"`
	TableSizeBytes        int64              `json:"TableSizeBytes"`
}

// SecondaryIndexInfo describes an index of a backed-up table.
type SecondaryIndexInfo struct {
	IndexName             string             `json:"IndexName"`
	KeySchema             []KeySchemaElement `json:"KeySchema"`
	Projection            Projection         `json:"Projection"`
	ProvisionedThroughput *throughputDesc    `json:"ProvisionedThroughput,omitempty"`
}

// backupTTLDesc is the TTL setting of a backed-up table.
type backupTTLDesc struct {
	TimeToLiveStatus string `json:"TimeToLiveStatus"`
	AttributeName    string `json:"AttributeName,omitempty"`
}

// SourceTableFeatureDetails describes the indexes, stream and TTL settings
// of the table a backup was taken of.
type SourceTableFeatureDetails struct {
	LocalSecondaryIndexes  []SecondaryIndexInfo `json:"LocalSecondaryIndexes,omitempty"`
	GlobalSecondaryIndexes []SecondaryIndexInfo `json:"GlobalSecondaryIndexes,omitempty"`
	StreamDescription      *StreamSpecification `json:"StreamDescription,omitempty"`
	TimeToLiveDescription  *backupTTLDesc       `json:"TimeToLiveDescription,omitempty"`
}

// BackupDescription is the full description of a backup.
type BackupDescription struct {
	BackupDetails             *BackupDetails             `json:"BackupDetails"`
	SourceTableDetails        *SourceTableDetails        `json:"SourceTableDetails"`
	SourceTableFeatureDetails *SourceTableFeatureDetails `json:"SourceTableFeatureDetails"`
}

// BackupDescriptionOutput is the response of DescribeBackup and DeleteBackup.
type BackupDescriptionOutput struct {
	BackupDescription *BackupDescription `json:"BackupDescription"`
}

func (r *backupRecord) description() *BackupDescription {
	m := &r.Table
	d := &BackupDescription{
		BackupDetails: r.details(),
		SourceTableDetails: &SourceTableDetails{
			TableName:             m.Name,
			TableID:               m.TableID,
			TableArn:              r.TableArn,
			KeySchema:             m.KeySchema,
			TableCreationDateTime: epochSeconds(m.CreatedMillis),
			ProvisionedThroughput: toThroughput(m.ProvisionedThroughput),
			ItemCount:             r.ItemCount,
			BillingMode:           m.BillingMode,
			TableSizeBytes:        r.SizeBytes,
		},
		SourceTableFeatureDetails: &SourceTableFeatureDetails{StreamDescription: m.Stream},
	}
	f := d.SourceTableFeatureDetails
	for _, im := range m.Indexes {
		info := SecondaryIndexInfo{IndexName: im.Name, KeySchema: im.KeySchema, Projection: im.Projection}
		if im.Global {
			pt := toThroughput(im.ProvisionedThroughput)
			info.ProvisionedThroughput = &pt
			f.GlobalSecondaryIndexes = append(f.GlobalSecondaryIndexes, info)
		} else {
			f.LocalSecondaryIndexes = append(f.LocalSecondaryIndexes, info)
		}
	}
	if m.TTLAttribute != "" {
		f.TimeToLiveDescription = &backupTTLDesc{TimeToLiveStatus: "ENABLED", AttributeName: m.TTLAttribute}
	} else {
		f.TimeToLiveDescription = &backupTTLDesc{TimeToLiveStatus: "DISABLED"}
	}
	return d
}

// DescribeBackup describes a backup.
func (s *Store) DescribeBackup(in *BackupARNInput) (*BackupDescriptionOutput, error) {
	var c constraintErrors
	checkBackupArn(&c, in.BackupArn)
	if err := c.err(); err != nil {
		return nil, err
	}
	r, err := s.getBackup(nil, *in.BackupArn)
	if err != nil {
		return nil, err
	}
	return &BackupDescriptionOutput{BackupDescription: r.description()}, nil
}

// DeleteBackup deletes a backup and returns its description (status
// DELETED).
func (s *Store) DeleteBackup(in *BackupARNInput) (*BackupDescriptionOutput, error) {
	var c constraintErrors
	checkBackupArn(&c, in.BackupArn)
	if err := c.err(); err != nil {
		return nil, err
	}
	r, err := s.getBackup(nil, *in.BackupArn)
	if err != nil {
		return nil, err
	}
	if r.Status != "AVAILABLE" {
		return nil, backupInUse()
	}
	if err := s.dropBackup(r); err != nil {
		return nil, internal(err)
	}
	r.Status = "DELETED"
	return &BackupDescriptionOutput{BackupDescription: r.description()}, nil
}

// ListBackupsInput is the request of ListBackups.
type ListBackupsInput struct {
	TableName               *string  `json:"TableName"`
	Limit                   *int     `json:"Limit"`
	TimeRangeLowerBound     *float64 `json:"TimeRangeLowerBound"`
	TimeRangeUpperBound     *float64 `json:"TimeRangeUpperBound"`
	ExclusiveStartBackupArn *string  `json:"ExclusiveStartBackupArn"`
	BackupType              string   `json:"BackupType"`
}

// BackupSummary is one backup in ListBackups.
type BackupSummary struct {
	TableName              string  `json:"TableName"`
	TableID                string  `json:"TableId"`
	TableArn               string  `json:"TableArn"`
	BackupArn              string  `json:"BackupArn"`
	BackupName             string  `json:"BackupName"`
	BackupCreationDateTime float64 `json:"BackupCreationDateTime"`
	BackupStatus           string  `json:"BackupStatus"`
	BackupType             string  `json:"BackupType"`
	BackupSizeBytes        int64   `json:"BackupSizeBytes"`
}

// ListBackupsOutput is the response of ListBackups.
type ListBackupsOutput struct {
	BackupSummaries        []BackupSummary `json:"BackupSummaries"`
	LastEvaluatedBackupArn *string         `json:"LastEvaluatedBackupArn,omitempty"`
}

func epochMillis(sec float64) int64 {
	if sec >= 0 {
		return int64(sec*1000 + 0.5)
	}
	return int64(sec*1000 - 0.5)
}

// ListBackups lists backups, ordered by table and then creation time,
// optionally of one table and created in [TimeRangeLowerBound,
// TimeRangeUpperBound).
func (s *Store) ListBackups(in *ListBackupsInput) (*ListBackupsOutput, error) {
	var c constraintErrors
	limit := 0
	if in.Limit != nil {
		switch {
		case *in.Limit < 1:
			c.add("Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit)
		case *in.Limit > 100:
			c.add("Value '%d' at 'limit' failed to satisfy constraint: Member must have value less than or equal to 100", *in.Limit)
		default:
			limit = *in.Limit
		}
	}
	if in.TableName != nil {
		checkTableRef(&c, "tableName", in.TableName)
	}
	switch in.BackupType {
	case "", "USER", "SYSTEM", "AWS_BACKUP", "ALL":
	default:
		c.add("Value '%s' at 'backupType' failed to satisfy constraint: Member must satisfy enum value set: [USER, SYSTEM, AWS_BACKUP, ALL]", in.BackupType)
	}
	if in.ExclusiveStartBackupArn != nil {
		checkArnField(&c, "exclusiveStartBackupArn", in.ExclusiveStartBackupArn)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	if in.TimeRangeLowerBound != nil && in.TimeRangeUpperBound != nil && *in.TimeRangeLowerBound > *in.TimeRangeUpperBound {
		return nil, validationf("TimeRangeLowerBound must be less than or equal to TimeRangeUpperBound")
	}
	out := &ListBackupsOutput{BackupSummaries: []BackupSummary{}}
	if in.BackupType == "SYSTEM" || in.BackupType == "AWS_BACKUP" {
		return out, nil // every backup here is a USER backup
	}
	lo := []byte{nsBackup, bkCatalog}
	if in.TableName != nil {
		lo = backupCatalogKey(s.arn(tableNameParam(*in.TableName)) + "/backup/")
	}
	hi := prefixSuccessor(lo)
	if in.ExclusiveStartBackupArn != nil {
		if k := append(backupCatalogKey(*in.ExclusiveStartBackupArn), 0); string(k) > string(lo) {
			lo = k
		}
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, internal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		var r backupRecord
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			return nil, internal(err)
		}
		if in.TimeRangeLowerBound != nil && r.CreatedMillis < epochMillis(*in.TimeRangeLowerBound) {
			continue
		}
		if in.TimeRangeUpperBound != nil && r.CreatedMillis >= epochMillis(*in.TimeRangeUpperBound) {
			continue
		}
		if limit > 0 && len(out.BackupSummaries) == limit {
			last := out.BackupSummaries[limit-1].BackupArn
			out.LastEvaluatedBackupArn = &last
			break
		}
		out.BackupSummaries = append(out.BackupSummaries, BackupSummary{
			TableName:              r.Table.Name,
			TableID:                r.Table.TableID,
			TableArn:               r.TableArn,
			BackupArn:              r.Arn,
			BackupName:             r.Name,
			BackupCreationDateTime: epochSeconds(r.CreatedMillis),
			BackupStatus:           r.Status,
			BackupType:             r.Type,
			BackupSizeBytes:        r.SizeBytes,
		})
	}
	if err := it.Error(); err != nil {
		return nil, internal(err)
	}
	return out, nil
}

// restoreOverrides are the overrides a restore request may carry.
type restoreOverrides struct {
	BillingModeOverride           string                 `json:"BillingModeOverride"`
	GlobalSecondaryIndexOverride  []IndexSpec            `json:"GlobalSecondaryIndexOverride"`
	LocalSecondaryIndexOverride   []IndexSpec            `json:"LocalSecondaryIndexOverride"`
	ProvisionedThroughputOverride *ProvisionedThroughput `json:"ProvisionedThroughputOverride"`
}

// RestoreTableFromBackupInput is the request of RestoreTableFromBackup.
type RestoreTableFromBackupInput struct {
	TargetTableName *string `json:"TargetTableName"`
	BackupArn       *string `json:"BackupArn"`
	restoreOverrides
}

// RestoreSummary tells where a restored table's data came from.
type RestoreSummary struct {
	SourceBackupArn   string  `json:"SourceBackupArn,omitempty"`
	SourceTableArn    string  `json:"SourceTableArn,omitempty"`
	RestoreDateTime   float64 `json:"RestoreDateTime"`
	RestoreInProgress bool    `json:"RestoreInProgress"`
}

// RestoredTableDescription is the TableDescription of a restored table
// with its RestoreSummary.
type RestoredTableDescription struct {
	*TableDescription
	RestoreSummary *RestoreSummary `json:"RestoreSummary"`
}

// RestoreTableOutput is the response of RestoreTableFromBackup and
// RestoreTableToPointInTime.
type RestoreTableOutput struct {
	TableDescription *RestoredTableDescription `json:"TableDescription"`
}

// RestoreTableFromBackup creates a new table holding a backup's items, with
// its secondary indexes rebuilt. The table is complete when it returns.
func (s *Store) RestoreTableFromBackup(in *RestoreTableFromBackupInput) (*RestoreTableOutput, error) {
	var c constraintErrors
	checkTableName(&c, "targetTableName", in.TargetTableName)
	checkBackupArn(&c, in.BackupArn)
	checkOverrides(&c, &in.restoreOverrides)
	if err := c.err(); err != nil {
		return nil, err
	}
	snap := s.db.NewSnapshot()
	defer snap.Close()
	r, err := s.getBackup(snap, *in.BackupArn)
	if err != nil {
		return nil, err
	}
	if r.Status != "AVAILABLE" {
		return nil, backupInUse()
	}
	target := *in.TargetTableName
	if _, exists := s.tableExists(target); exists {
		return nil, tableAlreadyExists(target)
	}
	m, verr := s.restoredMeta(&r.Table, target, &in.restoreOverrides)
	if verr != nil {
		return nil, verr
	}
	dp := backupDataPrefix(r.ID)
	t, rerr := s.restoreTable("RestoreTableFromBackup", m, func(emit func(suffix, raw []byte) error) error {
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: dp, UpperBound: prefixSuccessor(dp)})
		if err != nil {
			return err
		}
		defer it.Close()
		for it.First(); it.Valid(); it.Next() {
			if err := emit(it.Key()[len(dp):], it.Value()); err != nil {
				return err
			}
		}
		return it.Error()
	})
	if rerr != nil {
		return nil, rerr
	}
	return s.restoredOutput(t, &RestoreSummary{SourceBackupArn: r.Arn, SourceTableArn: r.TableArn, RestoreDateTime: epochSeconds(r.CreatedMillis)}), nil
}

func (s *Store) tableExists(name string) (*table, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.tables[name]
	return t, ok
}

// restoredOutput describes a just-restored table the way DynamoDB answers a
// restore request: CREATING, restore in progress (here it is already
// complete and ACTIVE, as DescribeTable shows).
func (s *Store) restoredOutput(t *table, sum *RestoreSummary) *RestoreTableOutput {
	d := s.describe(t, true)
	d.TableStatus = "CREATING"
	for _, g := range d.GlobalSecondaryIndexes {
		g.IndexStatus = "CREATING"
	}
	sum.RestoreInProgress = true
	return &RestoreTableOutput{TableDescription: &RestoredTableDescription{TableDescription: d, RestoreSummary: sum}}
}

func checkOverrides(c *constraintErrors, o *restoreOverrides) {
	if o.BillingModeOverride != "" && o.BillingModeOverride != "PROVISIONED" && o.BillingModeOverride != "PAY_PER_REQUEST" {
		c.add("Value '%s' at 'billingModeOverride' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", o.BillingModeOverride)
	}
	for i, ix := range o.GlobalSecondaryIndexOverride {
		checkName(c, fmt.Sprintf("globalSecondaryIndexOverride.%d.member.indexName", i+1), ix.IndexName)
		checkKeySchema(c, fmt.Sprintf("globalSecondaryIndexOverride.%d.member.keySchema", i+1), ix.KeySchema)
	}
	for i, ix := range o.LocalSecondaryIndexOverride {
		checkName(c, fmt.Sprintf("localSecondaryIndexOverride.%d.member.indexName", i+1), ix.IndexName)
		checkKeySchema(c, fmt.Sprintf("localSecondaryIndexOverride.%d.member.keySchema", i+1), ix.KeySchema)
	}
}

func sameKeySchema(a, b []KeySchemaElement) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// restoredMeta returns the metadata of a table restored from src under the
// name target: src's keys, indexes (or the overrides' subset of them),
// billing and throughput; no stream, TTL, PITR, tags or deletion
// protection (DynamoDB does not restore those). Ids are assigned by
// restoreTable.
func (s *Store) restoredMeta(src *tableMeta, target string, o *restoreOverrides) (*tableMeta, *Error) {
	now := s.opts.Now()
	mode := src.BillingMode
	if o.BillingModeOverride != "" {
		mode = o.BillingModeOverride
	}
	m := &tableMeta{
		TableID:       newUUID(),
		Name:          target,
		KeySchema:     src.KeySchema,
		BillingMode:   mode,
		TableClass:    src.TableClass,
		CreatedMillis: now.UnixMilli(),
	}
	if mode == "PAY_PER_REQUEST" {
		if err := validateThroughput(mode, o.ProvisionedThroughputOverride, "table"); err != nil {
			return nil, err
		}
		m.BillingModeChangedMillis = now.UnixMilli()
	} else {
		pt := src.ProvisionedThroughput
		if o.ProvisionedThroughputOverride != nil {
			pt = o.ProvisionedThroughputOverride
		}
		if err := validateThroughput(mode, pt, "table"); err != nil {
			return nil, err
		}
		m.ProvisionedThroughput = pt
	}
	pick := func(global bool, overrides []IndexSpec) ([]*indexMeta, *Error) {
		var out []*indexMeta
		if overrides == nil {
			for _, im := range src.Indexes {
				if im.Global == global {
					cp := *im
					overrides = append(overrides, IndexSpec{IndexName: cp.Name, KeySchema: cp.KeySchema, Projection: &cp.Projection, ProvisionedThroughput: cp.ProvisionedThroughput})
				}
			}
		}
		seen := map[string]bool{}
		for _, ov := range overrides {
			var found *indexMeta
			for _, im := range src.Indexes {
				if im.Global == global && im.Name == ov.IndexName {
					found = im
				}
			}
			if found == nil || !sameKeySchema(found.KeySchema, ov.KeySchema) {
				return nil, invalidParam("Provided index %s does not match any index of the source table", ov.IndexName)
			}
			if seen[ov.IndexName] {
				return nil, invalidParam("Duplicate index name: %s", ov.IndexName)
			}
			seen[ov.IndexName] = true
			proj := found.Projection
			if ov.Projection != nil {
				if err := validateProjection(ov.Projection, ov.IndexName); err != nil {
					return nil, err
				}
				proj = *ov.Projection
			}
			im := &indexMeta{Name: ov.IndexName, Global: global, KeySchema: found.KeySchema, Projection: proj, Status: "ACTIVE"}
			if global && mode == "PROVISIONED" {
				pt := ov.ProvisionedThroughput
				if pt == nil {
					pt = found.ProvisionedThroughput
				}
				if pt == nil {
					// The source was on demand: give the index the table's capacity.
					pt = m.ProvisionedThroughput
				}
				if err := validateThroughput(mode, pt, ov.IndexName); err != nil {
					return nil, err
				}
				im.ProvisionedThroughput = pt
			} else if global && ov.ProvisionedThroughput != nil && o.GlobalSecondaryIndexOverride != nil {
				if err := validateThroughput(mode, ov.ProvisionedThroughput, ov.IndexName); err != nil {
					return nil, err
				}
			}
			out = append(out, im)
		}
		return out, nil
	}
	lsis, err := pick(false, o.LocalSecondaryIndexOverride)
	if err != nil {
		return nil, err
	}
	gsis, err := pick(true, o.GlobalSecondaryIndexOverride)
	if err != nil {
		return nil, err
	}
	m.Indexes = append(lsis, gsis...)
	m.keepUsedDefinitions(src.AttributeDefinitions)
	return m, nil
}

// restoreTable creates table m (assigning its ids) from the items src
// emits, each as its key suffix (the storage key without the table prefix;
// m has the key schema of the items' source) and stored bytes. It writes
// items and index entries in batches and publishes the table metadata last;
// on failure, or if the name was taken meanwhile, it deletes what it wrote.
// An item that cannot be decoded is left out, logged and counted for op
// (corrupt.go).
func (s *Store) restoreTable(op string, m *tableMeta, src func(emit func(suffix, raw []byte) error) error) (*table, *Error) {
	marker := &restoreMarker{Name: m.Name}
	s.mu.Lock()
	if _, exists := s.tables[m.Name]; exists {
		s.mu.Unlock()
		return nil, tableAlreadyExists(m.Name)
	}
	b := s.db.NewBatch()
	m.ID = s.allocIDLocked(b)
	marker.TableID = m.ID
	for _, im := range m.Indexes {
		im.ID = s.allocIDLocked(b)
		marker.IndexIDs = append(marker.IndexIDs, im.ID)
	}
	mv, _ := json.Marshal(marker)
	b.Set(restoreMarkerKey(m.ID), mv, nil)
	err := b.Commit(s.wo)
	b.Close()
	s.mu.Unlock()
	if err != nil {
		return nil, internal(err)
	}

	t := newTable(m)
	fail := func(e *Error) (*table, *Error) {
		d := s.db.NewBatch()
		stageDropRestore(d, marker)
		if err := d.Commit(s.wo); err != nil {
			s.opts.Logger.Error("ddb: dropping a failed restore", "table", m.Name, "err", err)
		}
		d.Close()
		return nil, e
	}
	b = s.db.NewBatch()
	defer func() { b.Close() }()
	err = src(func(suffix, raw []byte) error {
		k := append(append(make([]byte, 0, len(t.prefix)+len(suffix)), t.prefix...), suffix...)
		// Every item is decoded, indexes or not: one that cannot be is
		// left out of the new table, not copied into it.
		item, err := decodeItem(raw)
		if err != nil {
			s.skipCorruptItem(op, t, k, err)
			return nil
		}
		b.Set(k, raw, nil)
		for _, ix := range t.indexes {
			if ik := ix.entryKey(t, item); ik != nil {
				b.Set(ik, encodeItem(ix.project(t, item)), nil)
			}
		}
		if b.Len() >= restoreBatchBytes {
			// Not synced: the synced commit that publishes the table
			// makes the whole write-ahead log before it durable.
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Close()
			b = s.db.NewBatch()
		}
		return nil
	})
	if err != nil {
		return fail(internal(err))
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.tables[m.Name]; exists {
		return fail(tableAlreadyExists(m.Name))
	}
	if err := s.putMeta(b, m); err != nil {
		return fail(internal(err))
	}
	b.Delete(restoreMarkerKey(m.ID), nil)
	if err := b.Commit(s.wo); err != nil {
		return fail(internal(err))
	}
	s.tables[m.Name] = t
	return t, nil
}

// encodeRestoreItem returns the key suffix and stored bytes of item in
// table t, for restoreTable.
func encodeRestoreItem(t *table, item attr.Item) (suffix, raw []byte) {
	return t.itemKey(item)[len(t.prefix):], encodeItem(item)
}
